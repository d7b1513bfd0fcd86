"""Single-instance reads and the newest-first listing of conversations."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Row, select
from sqlalchemy.orm import Session

from relay.store.models import Contact, Instance


def instance_by_id(session: Session, instance_id: str) -> Instance | None:
    """The instance with exactly this id, or None."""
    return session.scalar(select(Instance).where(Instance.id == instance_id))


def state_of(session: Session, instance_id: str) -> str | None:
    return session.scalar(select(Instance.state).where(Instance.id == instance_id))


def newest_instances(
    session: Session,
    *,
    state: str | None,
    address: str | None,
    campaign: str | None,
    limit: int,
) -> Sequence[Row[Instance, Contact]]:
    """(instance, contact) pairs newest first, filtered by state value, contact
    address and campaign when given."""
    query = select(Instance, Contact).join(Contact, Contact.id == Instance.contact_id)
    if state:
        query = query.where(Instance.state == state)
    if address:
        query = query.where(Contact.address == address)
    if campaign:
        query = query.where(Instance.campaign == campaign)
    query = query.order_by(Instance.seq.desc()).limit(limit)
    return session.execute(query).all()
