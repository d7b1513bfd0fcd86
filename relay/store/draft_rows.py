"""Drafts: the agent's messages that wait for a person's approval (status ``draft``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from relay.core.values import MessageStatus
from relay.store.tables import contacts, instances, messages

if TYPE_CHECKING:
    from relay.store.models import Message


def pending(session: Session, instance_id: str | None = None) -> Sequence[Any]:
    """Every draft (or one conversation's), oldest first, with its contact's address
    and its conversation's state and meta."""
    query = (
        select(
            messages.c.id,
            messages.c.instance_id,
            messages.c.body,
            messages.c.channel,
            messages.c.created_at,
            contacts.c.address,
            instances.c.state,
            instances.c.meta,
        )
        .join(instances, instances.c.id == messages.c.instance_id)
        .join(contacts, contacts.c.id == messages.c.contact_id)
        .where(messages.c.status == MessageStatus.DRAFT.value)
        .order_by(messages.c.id)
    )
    if instance_id is not None:
        query = query.where(messages.c.instance_id == instance_id)
    return session.execute(query).all()


def message(session: Session, message_id: int) -> Message | None:
    """The outbound message with this id, to change (its conversation locked first)."""
    from relay.store.models import Message

    return session.get(Message, message_id)


def instance_of(session: Session, message_id: int) -> str | None:
    """The conversation a message belongs to."""
    return session.scalar(select(messages.c.instance_id).where(messages.c.id == message_id))
