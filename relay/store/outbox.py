"""Outbox rows: a batch's insert, the ids of what it inserted, what a cancel
withdraws, which conversations still have messages in it, and a batch's
deliveries recorded with one statement."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import ScalarResult, select
from sqlalchemy.orm import Session

from relay.core.values import MessageStatus
from relay.store import fast_writes, prepared
from relay.store.among import among_param
from relay.store.due import undelivered
from relay.store.models import Message, table_of
from relay.store.prepared import per_dialect
from relay.store.tables import instances

if TYPE_CHECKING:
    from relay.store.prepared import AnySelect, Rows

#: What recording a delivery writes on its outbox row.
SENT_COLUMNS = (
    "status", "provider_message_id", "sent_at", "next_attempt_at", "last_error", "lease_owner"
)  # fmt: skip


def insert_outbox(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Insert a batch's outbox rows with one statement (no ORM objects; every row
    with the same keys: :mod:`relay.store.fast_writes`)."""
    fast_writes.insert_rows(session, table_of(Message), rows)


def ids_by_key(session: Session, keys: Iterable[str]) -> Rows:
    """(id, idempotency key) of the messages with these keys (one indexed query)."""
    return prepared.batch(session, _ids_by_key, keys)


@per_dialect
def _ids_by_key(dialect: str) -> AnySelect:
    return select(Message.id, Message.idempotency_key).where(
        among_param(dialect, Message.idempotency_key, "ids")
    )


def queued_of(session: Session, instance_id: str) -> ScalarResult[Message]:
    """The conversation's messages still waiting in the outbox, drafts included."""
    return session.scalars(
        select(Message).where(
            Message.instance_id == instance_id,
            Message.status.in_((MessageStatus.QUEUED.value, MessageStatus.DRAFT.value)),
        )
    )


def record_sent(session: Session, deliveries: Iterable[tuple[int, str, datetime]]) -> None:
    """Mark delivered messages (id, provider id, time) sent: one executemany for the batch."""
    params = [
        {
            fast_writes.ID_KEY: message_id,
            "status": MessageStatus.SENT.value,
            "provider_message_id": provider_id,
            "sent_at": at,
            "next_attempt_at": None,
            "last_error": None,
            "lease_owner": None,
        }
        for message_id, provider_id, at in deliveries
    ]
    if params:
        fast_writes.update_by_id(session, table_of(Message), SENT_COLUMNS, params)


def pending_of(session: Session, instance_ids: Sequence[str]) -> set[str]:
    """Which of these conversations have outbound messages still in the outbox
    (:func:`relay.store.due.undelivered`): one indexed query."""
    if not instance_ids:
        return set()
    return {row[0] for row in prepared.batch(session, _pending_of, instance_ids)}


@per_dialect
def _pending_of(dialect: str) -> AnySelect:
    return select(instances.c.id).where(
        among_param(dialect, instances.c.id, "ids"), undelivered(instances.c.id)
    )
