"""Outbox rows: a new row's columns (queued, or a draft), one row written, a batch's
insert, the ids of what it inserted, what a cancel withdraws, which conversations
still have messages in it, and a batch's deliveries recorded with one statement."""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import ScalarResult, select
from sqlalchemy.orm import Session

from relay.core.values import Author, Direction, MessageStatus
from relay.store.due import undelivered
from relay.store.hotpath import fast_writes, prepared
from relay.store.hotpath.among import among_param
from relay.store.hotpath.prepared import per_dialect
from relay.store.models import Message, table_of
from relay.store.tables import instances

if TYPE_CHECKING:
    from relay.store.hotpath.locked_rows import InstanceFields
    from relay.store.hotpath.prepared import AnySelect, Rows

#: What recording a delivery writes on its outbox row.
SENT_COLUMNS = (
    "status", "provider_message_id", "sent_at", "next_attempt_at", "last_error", "lease_owner"
)  # fmt: skip


def queue_outbound(
    session: Session,
    instance: InstanceFields,
    body: str,
    author: Author,
    now: datetime,
    *,
    proactive: bool = False,
    flush: bool = True,
) -> Message:
    """Write an outbound message as an outbox row; the dispatcher delivers it.

    ``flush=False`` leaves the insert to the transaction's commit (a batch of
    turns writes its rows together); the message then has no id yet.
    """
    message = Message(**outbound_row(instance, body, author, now, proactive=proactive))
    session.add(message)
    if flush:
        session.flush()
    return message


def outbound_row(
    instance: InstanceFields, body: str, author: Author, now: datetime, *, proactive: bool = False
) -> dict[str, Any]:
    """The columns of a new outbox row: :func:`queue_outbound` makes an ORM object of
    them; a batch of turn commits inserts its rows with one statement instead."""
    return {
        "instance_id": instance.id,
        "contact_id": instance.contact_id,
        "direction": Direction.OUTBOUND.value,
        "author": author.value,
        "body": body,
        "status": MessageStatus.QUEUED.value,
        "channel": instance.channel,
        # 128 random bits as hex: what uuid4().hex gave, without building a UUID
        # (a few microseconds a message on the daemon's hot path).
        "idempotency_key": secrets.token_hex(16),
        "attempts": 0,
        "next_attempt_at": now,
        # Set when the committing worker leases the row at once (Dispatcher.lease_new).
        "lease_owner": None,
        "proactive": int(proactive),
        "created_at": now,
    }


def as_draft(row: dict[str, Any]) -> dict[str, Any]:
    """An outbox row that waits for a person's approval: the dispatcher never sees it."""
    row["status"] = MessageStatus.DRAFT.value
    row["next_attempt_at"] = None
    return row


def cancel_outbox(session: Session, instance_id: str) -> None:
    """A cancelled conversation sends nothing more, not even what was queued."""
    for message in queued_of(session, instance_id):
        message.status = MessageStatus.CANCELLED.value
        message.next_attempt_at = None


def insert_outbox(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Insert a batch's outbox rows with one statement (no ORM objects; every row
    with the same keys: :mod:`relay.store.hotpath.fast_writes`)."""
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
