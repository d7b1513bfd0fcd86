"""The conversation wing: one instance's life. Transitions (the one place a state changes),
the event log, the audit actor, policy (windows, legal hours, a number's place), the
forecast of what comes next and the heartbeat that fires follow-ups.

Entry: :mod:`.transitions` (``fire``) and :mod:`.heartbeat` (``beat``).
"""
