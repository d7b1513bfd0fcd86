"""Pruning: the statements of the daemon's maintenance job (``relay.runner.retention``)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from relay.core.values import MessageStatus
from relay.store.database import affected
from relay.store.models import Instance, Message


def forget_delivery_bookkeeping(session: Session, cutoff: datetime) -> int:
    """Clear the idempotency keys and errors of messages sent before ``cutoff``: they
    will never be retried (the transcript text stays)."""
    done = session.execute(
        update(Message)
        .where(
            Message.status == MessageStatus.SENT.value,
            Message.sent_at < cutoff,
            Message.idempotency_key.is_not(None),
        )
        .values(idempotency_key=None, last_error=None, next_attempt_at=None)
    )
    return affected(done)


def delete_ended_transcripts(session: Session, cutoff: datetime) -> int:
    """Delete the transcripts of conversations that ended before ``cutoff``."""
    ended = select(Instance.id).where(Instance.ended_at < cutoff)
    # A reply that came after the end and nobody has looked at yet stays.
    done = session.execute(
        delete(Message).where(
            Message.instance_id.in_(ended),
            Message.status != MessageStatus.RECEIVED.value,
        )
    )
    return affected(done)
