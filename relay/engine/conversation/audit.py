"""The command audit log: who ran which operator command, when, with what arguments.

Each command is recorded as a ``command`` event in the command's own transaction
(so it is in the log exactly when its effect is), and shows in ``relay events``
and ``relay history``. Message bodies and secrets are never recorded: ``send``
records the message's id and length, not its text.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from relay.core.secrets import is_secret_key
from relay.core.values import EventKind

#: The actor of a command an operator ran (the person is
#: :func:`relay.engine.runtime.os_user` or ``--actor``).
OPERATOR = "operator"
#: Arguments never copied into the log, whatever the command.
_WITHHELD = frozenset({"text", "body", "message"})


def record(
    session: Session,
    command: str,
    instance_id: str | None,
    args: dict[str, Any],
    now: datetime,
    *,
    actor: str,
) -> None:
    kept = {
        key: value
        for key, value in args.items()
        if value is not None and key not in _WITHHELD and not is_secret_key(key)
    }
    data = {"command": command, "args": kept}
    # Imported here: the event log (and its models) is the write side; a read
    # command that only asks for OPERATOR loads none of it.
    from relay.engine.conversation import transitions

    transitions.record(session, EventKind.COMMAND, instance_id, data, now, actor=actor)
