"""Named read queries for the operator's views: contacts, the inbox of unrouted
inbound, ``relay watch``'s rows and ``relay show``'s next message. Each is one
or two statements, whatever the number of rows, so a refreshing view does not
hammer the store. Those that return mapped objects import the models where they
run (``relay show`` loads none)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from relay.core.states import NEEDS_PERSON_STATE, QUEUED_STATE
from relay.core.values import Direction
from relay.store.tables import instances

if TYPE_CHECKING:
    from relay.store.models import InboundReject

#: Marks inbound kept on a conversation that had already ended (``engine.inbound.LATE``).
LATE_NOTE = "after the conversation ended"


def contact_rows(session: Session, *, campaign: str | None, limit: int) -> list[Any]:
    """Contacts newest first with their conversation counts (one statement)."""
    from relay.store.models import Contact, Instance

    counts = select(
        Instance.contact_id,
        func.count().label("conversations"),
        func.sum(case((Instance.state == QUEUED_STATE.value, 1), else_=0)).label("queued"),
        func.max(Instance.contact_slot).label("busy"),
    )
    if campaign:
        counts = counts.where(Instance.campaign == campaign)
    grouped = counts.group_by(Instance.contact_id).subquery()
    holder = select(Instance.id).where(Instance.contact_slot == Contact.id).scalar_subquery()
    query = select(
        Contact,
        func.coalesce(grouped.c.conversations, 0).label("conversations"),
        func.coalesce(grouped.c.queued, 0).label("queued"),
        holder.label("live_instance"),
    )
    if campaign:
        query = query.join(grouped, grouped.c.contact_id == Contact.id)
    else:
        query = query.outerjoin(grouped, grouped.c.contact_id == Contact.id)
    return list(session.execute(query.order_by(Contact.id.desc()).limit(limit)).all())


def unrouted_inbound(session: Session, limit: int) -> list[Any]:
    """Inbound that reached no conversation, newest first, with the sender."""
    from relay.store.models import Contact, Message

    return list(
        session.execute(
            select(Message, Contact.address)
            .join(Contact, Contact.id == Message.contact_id)
            .where(Message.instance_id.is_(None), Message.direction == Direction.INBOUND.value)
            .order_by(Message.id.desc())
            .limit(limit)
        ).all()
    )


def late_inbound(session: Session, limit: int) -> list[Any]:
    """Inbound that arrived after its conversation ended, newest first."""
    from relay.store.models import Contact, Message

    return list(
        session.execute(
            select(Message, Contact.address)
            .join(Contact, Contact.id == Message.contact_id)
            .where(
                Message.instance_id.is_not(None),
                Message.direction == Direction.INBOUND.value,
                Message.note.contains(LATE_NOTE),
            )
            .order_by(Message.id.desc())
            .limit(limit)
        ).all()
    )


def rejected_inbound(session: Session, limit: int) -> Sequence[InboundReject]:
    """Inbound kept aside because its sender is no usable address, newest first."""
    from relay.store.models import InboundReject

    return session.scalars(
        select(InboundReject).order_by(InboundReject.id.desc()).limit(limit)
    ).all()


def watch_rows(
    session: Session,
    *,
    states: Sequence[str],
    contact_id: int | None,
    campaign: str | None,
    limit: int,
) -> list[Any]:
    """``relay watch``'s conversations: needs-human first, then the most recently
    changed, each with its contact's address, queue depth and fields (the name an
    import gave) (one statement)."""
    from relay.store.models import Contact, Instance

    depth = (
        select(Instance.contact_id, func.count().label("depth"))
        .where(Instance.state == QUEUED_STATE.value)
        .group_by(Instance.contact_id)
        .subquery()
    )
    needs_you = case((Instance.state == NEEDS_PERSON_STATE.value, 0), else_=1)
    query = (
        select(
            Instance,
            Contact.address,
            func.coalesce(depth.c.depth, 0).label("depth"),
            Contact.fields,
        )
        .join(Contact, Contact.id == Instance.contact_id)
        .outerjoin(depth, depth.c.contact_id == Instance.contact_id)
        .where(Instance.state.in_(states))
    )
    if contact_id is not None:
        query = query.where(Instance.contact_id == contact_id)
    if campaign:
        query = query.where(Instance.campaign == campaign)
    query = query.order_by(needs_you, Instance.updated_at.desc(), Instance.seq.desc())
    return list(session.execute(query.limit(limit)).all())


def import_keys_present(session: Session, keys: Sequence[str]) -> set[str]:
    """Which of ``keys`` an earlier import already used."""
    if not keys:
        return set()
    return set(
        session.scalars(select(instances.c.import_key).where(instances.c.import_key.in_(keys)))
    )
