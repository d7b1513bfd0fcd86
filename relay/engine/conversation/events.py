"""The event log a program follows (``relay events``, ``relay wait``): what happened,
in commit order, each with a stable cursor (its id).

The few places that change state call :func:`record` in the transaction that
changes it; the rows are inserted when that transaction commits (see
:mod:`relay.store.events`). Message bodies are not copied into events: a program
reads them with ``relay transcript``; events carry message ids.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from enum import StrEnum
from operator import itemgetter
from typing import Any

from sqlalchemy.orm import Session

from relay.core.values import MessageStatus
from relay.store import events as store_events
from relay.store import outbox as outbox_rows
from relay.store.models import Message


class Kind(StrEnum):
    STATE = "state.changed"
    QUEUED = "message.queued"
    RECEIVED = "message.received"
    SENT = "message.sent"
    FAILED = "message.failed"
    ANSWER = "answer.recorded"
    COMMAND = "command"
    #: A draft written, approved or rejected (``data.action``).
    DRAFT = "draft"
    #: A conversation with a channel ladder moved to another channel (``data.from``,
    #: ``data.to``, ``data.reason``: see relay.engine.conversation.fallback).
    CHANNEL = "channel.changed"

    def __str__(self) -> str:
        return self.value


def record(
    session: Session,
    kind: Kind,
    instance_id: str | None,
    data: dict[str, Any],
    now: datetime,
    *,
    actor: str | None = None,
) -> None:
    """Add one event to the session's transaction (inserted at its commit)."""
    store_events.add(
        session,
        {
            "kind": kind.value,
            "instance_id": instance_id,
            "actor": actor,
            "data": data,
            "created_at": now,
        },
    )


def record_outbound(
    session: Session, rows: Iterable[dict[str, Any]], now: datetime
) -> dict[str, int]:
    """``message.queued`` for outbox rows a batch inserted with one statement (they
    have no ids in hand: found by their idempotency keys, one indexed query); the
    ids by key."""
    keys = {row["idempotency_key"]: row for row in rows}
    if not keys:
        return {}
    # By id, in C: sorting the Rows themselves compares them in Python (5 ms a batch of 500).
    found = sorted(outbox_rows.ids_by_key(session, keys), key=itemgetter(0))
    for message_id, key in found:
        row = keys[key]
        data = _queued(message_id, row)
        if row["status"] == MessageStatus.DRAFT.value:
            record(session, Kind.DRAFT, row["instance_id"], {**data, "action": "written"}, now)
        else:
            record(session, Kind.QUEUED, row["instance_id"], data, now)
    return {key: message_id for message_id, key in found}


def record_queued(session: Session, message: Message, now: datetime) -> None:
    data = _queued(message.id, {"author": message.author, "channel": message.channel})
    record(session, Kind.QUEUED, message.instance_id, data, now)


def _queued(message_id: int, row: dict[str, Any]) -> dict[str, Any]:
    return {"message_id": message_id, "author": row.get("author"), "channel": row.get("channel")}
