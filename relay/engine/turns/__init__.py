"""The turns wing: the agent's turn on a conversation. The runner claims due turns,
reads what the agent is shown (the context) and checks the answers it gives; the commit
writes its turn back, with what an agent keeps besides messages (its answers per todo
and its scoped state).

Entry: :mod:`.runner` (``TurnRunner``).
"""
