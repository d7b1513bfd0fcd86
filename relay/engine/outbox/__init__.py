"""The outbox wing: everything between a queued message and its delivery. The dispatcher
sends; the screen rules a message out or holds it (opt-outs, pauses, windows, rates);
rates hold back what does not fit a rate; doubts confirm a group is still ours before
its sends and ask a channel about a send a crash left unsettled; outcomes write rows
and record what the channel said.

Entry: :mod:`.dispatcher` (``Dispatcher``).
"""
