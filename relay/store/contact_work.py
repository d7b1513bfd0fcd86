"""A contact's outstanding work: what is queued to go to them and the
conversations with them not yet ended. Read when the contact opts out or their
address turns out undeliverable, so that nothing more reaches them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from relay.core.states import State
from relay.core.values import Direction, MessageStatus
from relay.store.models import Instance, Message

#: Outbound that has not started on its way: queued, or a draft awaiting approval.
WAITING = (MessageStatus.QUEUED.value, MessageStatus.DRAFT.value)


def queued_outbound_to(session: Session, contact_id: int) -> Sequence[Message]:
    """Outbound for the contact still queued (not yet being sent), drafts included
    (a draft approved later must find itself held too), locked.

    Locked, so that a claim taking one of them at this moment goes first: on
    PostgreSQL the lock waits for the claim's commit and then re-reads the row,
    which is ``sending`` by then and no longer matches (an opt-out then waits
    for that send, see ``relay.engine.contacts.settling``). Unlocked, the opt-out's UPDATE
    overwrote the claim's ``sending`` with ``blocked`` after the claim committed,
    and the dispatcher sent it all the same, after the opt-out had returned."""
    return session.scalars(
        select(Message)
        .where(
            Message.contact_id == contact_id,
            Message.direction == Direction.OUTBOUND.value,
            Message.status.in_(WAITING),
        )
        .with_for_update()
        .execution_options(populate_existing=True)
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


def unsettled_to(session: Session, contact_id: int, now: datetime) -> int:
    """Outbound to the contact claimed by a live lease (``sending``, lease not run
    out): a dispatcher may be handing it to a channel right now."""
    sending = Message.status == MessageStatus.SENDING.value
    return _outbound_count(session, contact_id, sending & (Message.next_attempt_at > now))


def handed_over_to(session: Session, contact_id: int, since: datetime) -> int:
    """Outbound to the contact still ``sending``, or recorded sent at or after ``since``."""
    sending = Message.status == MessageStatus.SENDING.value
    sent = (Message.status == MessageStatus.SENT.value) & (Message.sent_at >= since)
    return _outbound_count(session, contact_id, sending | sent)


def _outbound_count(session: Session, contact_id: int, which: ColumnElement[bool]) -> int:
    query = select(func.count()).where(
        Message.contact_id == contact_id,
        Message.direction == Direction.OUTBOUND.value,
        which,
    )
    return int(session.scalar(query.select_from(Message)) or 0)
