"""What a conversation's channel ladder reads and writes in the outbox
(:mod:`relay.engine.conversation.fallback` decides, :mod:`relay.core.ladder` rules)."""

from __future__ import annotations

import secrets
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from relay.core.values import Direction, InboundKind, MessageStatus
from relay.store.models import Message


def first_sent_on(session: Session, instance_id: str, channel: str) -> datetime | None:
    """When the conversation's first message on ``channel`` went out (None: none has)."""
    query = select(func.min(Message.sent_at)).where(
        Message.instance_id == instance_id,
        Message.channel == channel,
        Message.direction == Direction.OUTBOUND.value,
        Message.status == MessageStatus.SENT.value,
    )
    return session.scalar(query)


def last_reply_at(session: Session, instance_id: str) -> datetime | None:
    """When the contact last wrote in the conversation, on any channel."""
    query = select(func.max(Message.created_at)).where(
        Message.instance_id == instance_id,
        Message.direction == Direction.INBOUND.value,
        Message.kind == InboundKind.MESSAGE.value,
    )
    return session.scalar(query)


def move_queued(session: Session, instance_id: str, old: str, new: str) -> int:
    """The conversation's messages still queued on ``old`` go on ``new``; how many."""
    result = session.execute(
        update(Message)
        .where(
            Message.instance_id == instance_id,
            Message.channel == old,
            Message.direction == Direction.OUTBOUND.value,
            Message.status == MessageStatus.QUEUED.value,
        )
        .values(channel=new)
        .execution_options(synchronize_session="fetch")
    )
    return int(getattr(result, "rowcount", 0) or 0)


def send_again(session: Session, message: Message, channel: str, now: datetime) -> Message:
    """A new outbox row with ``message``'s text, on ``channel``, due now (its own
    idempotency key: it is another message to the provider)."""
    copy = Message(
        instance_id=message.instance_id,
        contact_id=message.contact_id,
        direction=Direction.OUTBOUND.value,
        author=message.author,
        body=message.body,
        status=MessageStatus.QUEUED.value,
        channel=channel,
        idempotency_key=secrets.token_hex(16),
        attempts=0,
        next_attempt_at=now,
        proactive=message.proactive,
        note=f"sent again on {channel}: message {message.id} could not be delivered on "
        f"{message.channel}",
        created_at=now,
    )
    session.add(copy)
    session.flush()
    return copy
