"""What ``relay doctor`` reads to check the store against the invariants of docs/architecture.md."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from relay.core.values import Direction, MessageStatus
from relay.store.models import Contact, EventRow, Instance, Message


def all_instances(session: Session) -> list[Instance]:
    """Every conversation, oldest first."""
    return list(session.scalars(select(Instance).order_by(Instance.seq)))


def logged_states(session: Session) -> dict[str, str]:
    """Each instance's state according to its newest state change on record."""
    newest = (
        select(func.max(EventRow.id))
        .where(EventRow.to_state.is_not(None), EventRow.instance_id.is_not(None))
        .group_by(EventRow.instance_id)
    )
    rows = session.execute(
        select(EventRow.instance_id, EventRow.to_state).where(EventRow.id.in_(newest))
    )
    return {str(instance_id): str(state) for instance_id, state in rows}


def queued_for_opted_out(session: Session) -> Sequence[Any]:
    """(message id, address) of outbound still queued for a contact who opted out."""
    return session.execute(
        select(Message.id, Contact.address)
        .join(Contact, Contact.id == Message.contact_id)
        .where(
            Message.direction == Direction.OUTBOUND.value,
            Message.status == MessageStatus.QUEUED.value,
            Contact.opted_out_at.is_not(None),
        )
    ).all()
