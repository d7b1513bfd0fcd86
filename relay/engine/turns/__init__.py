"""The turns wing: the agent's turn on a conversation. The runner claims due turns, the
context is what the agent is shown, the commit writes its answer back (answers parsed
per todo).

Entry: :mod:`.runner` (``TurnRunner``).
"""
