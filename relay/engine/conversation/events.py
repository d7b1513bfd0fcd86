"""The one record of what happened: the event log a program follows (``relay
events``, ``relay wait``), in commit order, each row with a stable cursor (its id);
a state change's row is also what ``relay history`` lists (issue 31: one row per
change, where there were a transition-log row and an event).

The few places that change state call :func:`record` (a state change:
:func:`record_change`) in the transaction that changes it; the rows are inserted
with one statement when that transaction commits (see :mod:`relay.store.events`).
Message bodies are not copied into events: a program reads them with ``relay
transcript``; events carry message ids.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from enum import StrEnum
from operator import itemgetter
from typing import Any

from sqlalchemy.orm import Session

from relay.core.states import Event, State
from relay.core.values import MessageStatus
from relay.store import commit_log
from relay.store import events as store_events
from relay.store import outbox as outbox_rows
from relay.store.models import Message

log = logging.getLogger("relay.state")


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
            **store_events.NO_CHANGE,
        },
    )


def record_change(
    session: Session,
    instance_id: str,
    step: tuple[State, State, Event],
    actor: str,
    reason: str | None,
    now: datetime,
) -> None:
    """A state change (from, to, event): its one row, in ``relay events`` and ``relay
    history`` alike, and its log lines (written with the transaction)."""
    current, target, event = step
    _change(session, instance_id, (current.value, target.value, event.value), actor, reason, now)
    # The reason may quote the contact (an opt-out, an agent's words): DEBUG only.
    commit_log.info(
        session,
        log,
        "instance %s: %s -> %s (%s by %s)",
        instance_id,
        current.value,
        target.value,
        event.value,
        actor,
        instance_id=instance_id,
    )
    commit_log.debug(
        session, log, "instance %s: reason: %s", instance_id, reason or "-", instance_id=instance_id
    )


def record_creation(
    session: Session, instance_id: str, state: str, now: datetime, actor: str
) -> None:
    """A conversation's first row: ``start`` into its first state."""
    _change(session, instance_id, (None, state, CREATION), actor, None, now)


#: The ``event`` of a conversation's first row.
CREATION = "start"


def creation_rows(
    instance_id: str,
    steps: list[tuple[str | None, str, str, str | None]],
    actor: str,
    now: datetime,
) -> list[dict[str, Any]]:
    """The rows of a bulk import's creations, (from, to, event, reason) each, for one
    insert with the batch (:mod:`relay.store.bulk_inserts`)."""
    return [
        _change_row(instance_id, (before, after, event), actor, reason, now)
        for before, after, event, reason in steps
    ]


def _change(
    session: Session,
    instance_id: str,
    step: tuple[str | None, str, str],
    actor: str,
    reason: str | None,
    now: datetime,
) -> None:
    store_events.add(session, _change_row(instance_id, step, actor, reason, now))


def _change_row(
    instance_id: str,
    step: tuple[str | None, str, str],
    actor: str,
    reason: str | None,
    now: datetime,
) -> dict[str, Any]:
    """A state change's row: its own columns, no ``data`` (``relay events`` makes it)."""
    return {
        "kind": Kind.STATE.value,
        "instance_id": instance_id,
        "actor": actor,
        "data": None,
        "created_at": now,
        "from_state": step[0],
        "to_state": step[1],
        "event": step[2],
        "reason": reason,
    }


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
