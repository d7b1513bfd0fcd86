"""Reads about contacts: what arrived from one that matched no conversation, and
the addresses of many."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from relay.store.models import Contact, Message


def unrouted_of(session: Session, contact_id: int) -> Sequence[Message]:
    """The contact's messages that belong to no conversation, oldest first."""
    return session.scalars(
        select(Message)
        .where(Message.contact_id == contact_id, Message.instance_id.is_(None))
        .order_by(Message.id)
    ).all()


def addresses_by_id(session: Session, contact_ids: Iterable[int]) -> dict[int, str]:
    """{contact id: address} for these contacts."""
    query = select(Contact.id, Contact.address).where(Contact.id.in_(list(contact_ids)))
    return {int(contact_id): str(address) for contact_id, address in session.execute(query)}
