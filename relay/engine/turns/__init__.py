"""The turns wing: the agent's turn on a conversation. The runner claims due turns and
reads what the agent is shown (the context), the commit writes its answer back (answers
parsed per todo).

Entry: :mod:`.runner` (``TurnRunner``).
"""
