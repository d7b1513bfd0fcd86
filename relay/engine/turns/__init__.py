"""The turns wing: the agent's turn on a conversation. The runner claims due turns and
reads what the agent is shown (the context), the commit writes its answer back, and
answers holds what an agent keeps besides messages (its answers per todo, checked, and
its scoped state).

Entry: :mod:`.runner` (``TurnRunner``).
"""
