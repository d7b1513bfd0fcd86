"""The outbox wing: everything between a queued message and its delivery. The dispatcher
sends; the screen rules a message out or holds it (opt-outs, pauses, windows, rates)
and records what becomes of one the channel did not take (retried, held, given up);
rates hold back what does not fit a rate; doubts confirm a group is still ours before
its sends and ask a channel about a send a crash left unsettled. The outbox rows
themselves are written by :mod:`relay.store.outbox`.

Entry: :mod:`.dispatcher` (``Dispatcher``).
"""
