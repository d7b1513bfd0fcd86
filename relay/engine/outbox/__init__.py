"""The outbox wing: everything between a queued message and its delivery. The dispatcher
sends, the screen rules a message out before sending, the gate checks the channel, rates
and pacing hold back, outcomes record what the channel said.

Entry: :mod:`.dispatcher` (``Dispatcher``).
"""
