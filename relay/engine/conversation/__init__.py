"""The conversation wing: one instance's life. Transitions (the one place a state changes),
the event log, the audit actor, policy, the forecast of what comes next, scoped state
and the heartbeat that fires follow-ups.

Entry: :mod:`.transitions` (``fire``) and :mod:`.heartbeat` (``beat``).
"""
