"""Outbox rows: what a turn or an operator writes for the dispatcher to deliver."""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from relay.core.values import Author, Direction, MessageStatus
from relay.store import outbox as outbox_rows
from relay.store.locked_rows import InstanceFields
from relay.store.models import Message


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


#: Where the agent's next turn finds the draft a person rejected and why (its
#: ``state``): ``{"message_id": ..., "text": ..., "reason": ...}``; cleared by that turn.
REJECTED_KEY = "relay:rejected_draft"


def as_draft(row: dict[str, Any]) -> dict[str, Any]:
    """An outbox row that waits for a person's approval: the dispatcher never sees it."""
    row["status"] = MessageStatus.DRAFT.value
    row["next_attempt_at"] = None
    return row


def cancel_outbox(session: Session, instance_id: str) -> None:
    """A cancelled conversation sends nothing more, not even what was queued."""
    for message in outbox_rows.queued_of(session, instance_id):
        message.status = MessageStatus.CANCELLED.value
        message.next_attempt_at = None
