"""A contact's outstanding work: what is queued to go to them and the
conversations with them not yet ended. Read when the contact opts out or their
address turns out undeliverable, so that nothing more reaches them."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from relay.core.states import State
from relay.core.values import Direction, MessageStatus
from relay.store.models import Instance, Message

#: Outbound that has not started on its way: queued, or a draft awaiting approval.
WAITING = (MessageStatus.QUEUED.value, MessageStatus.DRAFT.value)


def queued_outbound_to(session: Session, contact_id: int) -> Sequence[Message]:
    """Outbound for the contact still queued (not yet being sent), drafts included:
    a draft approved later must find itself held too."""
    return session.scalars(
        select(Message).where(
            Message.contact_id == contact_id,
            Message.direction == Direction.OUTBOUND.value,
            Message.status.in_(WAITING),
        )
    ).all()


def lock_unfinished(session: Session, contact_id: int) -> Sequence[Instance]:
    """The contact's non-terminal conversations, oldest first, locked."""
    return session.scalars(
        select(Instance)
        .where(
            Instance.contact_id == contact_id,
            Instance.state.not_in([s.value for s in State if s.terminal]),
        )
        .order_by(Instance.seq)
        .with_for_update()
    ).all()
