"""What ``relay doctor`` reads to check the store against the invariants of docs/architecture.md."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from relay.core.values import Direction, MessageStatus
from relay.store.models import Contact, Instance, Message, Transition


def all_instances(session: Session) -> list[Instance]:
    """Every conversation, oldest first."""
    return list(session.scalars(select(Instance).order_by(Instance.seq)))


def logged_states(session: Session) -> dict[str, str]:
    """Each instance's state according to its newest transition-log row."""
    return dict(
        session.execute(
            select(Transition.instance_id, Transition.to_state).where(
                Transition.id.in_(select(func.max(Transition.id)).group_by(Transition.instance_id))
            )
        ).all()
    )


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
