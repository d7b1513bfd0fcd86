"""Outbox rows: a batch's insert, the ids of what it inserted, what a cancel
withdraws, and a batch's deliveries recorded with one statement."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Result, ScalarResult, insert, select, update
from sqlalchemy.orm import Session

from relay.core.values import MessageStatus
from relay.store.models import Message, table_of


def insert_outbox(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Insert a batch's outbox rows with one statement (no ORM objects)."""
    session.execute(insert(table_of(Message)), rows)


def ids_by_key(session: Session, keys: Iterable[str]) -> Result[int, str | None]:
    """(id, idempotency key) of the messages with these keys (one indexed query)."""
    return session.execute(
        select(Message.id, Message.idempotency_key).where(Message.idempotency_key.in_(list(keys)))
    )


def queued_of(session: Session, instance_id: str) -> ScalarResult[Message]:
    """The conversation's messages still waiting in the outbox."""
    return session.scalars(
        select(Message).where(
            Message.instance_id == instance_id, Message.status == MessageStatus.QUEUED.value
        )
    )


def record_sent(session: Session, deliveries: Iterable[tuple[int, str, datetime]]) -> None:
    """Mark delivered messages (id, provider id, time) sent: one executemany for the batch."""
    session.execute(
        update(Message),
        [
            {
                "id": message_id,
                "status": MessageStatus.SENT.value,
                "provider_message_id": provider_id,
                "sent_at": at,
                "next_attempt_at": None,
                "last_error": None,
                "lease_owner": None,
            }
            for message_id, provider_id, at in deliveries
        ],
    )
