"""Reads about contacts: what arrived from one that matched no conversation, and
the addresses of many."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session

from relay.store.tables import contacts

if TYPE_CHECKING:
    from relay.store.models import Message


def unrouted_of(session: Session, contact_id: int) -> Sequence[Message]:
    """The contact's messages that belong to no conversation, oldest first."""
    from relay.store.models import Message

    return session.scalars(
        select(Message)
        .where(Message.contact_id == contact_id, Message.instance_id.is_(None))
        .order_by(Message.id)
    ).all()


def addresses_by_id(session: Session, contact_ids: Iterable[int]) -> dict[int, str]:
    """{contact id: address} for these contacts."""
    query = select(contacts.c.id, contacts.c.address).where(contacts.c.id.in_(list(contact_ids)))
    return {int(contact_id): str(address) for contact_id, address in session.execute(query)}


def address_of(session: Session, contact_id: int) -> str:
    """The contact's address (every instance and message has its contact)."""
    address = session.scalar(select(contacts.c.address).where(contacts.c.id == contact_id))
    assert address is not None, contact_id
    return str(address)


def timezone_of(session: Session, contact_id: int) -> str | None:
    return session.scalar(select(contacts.c.timezone).where(contacts.c.id == contact_id))


def place_facts(
    session: Session, contact_ids: Iterable[int]
) -> dict[int, tuple[str, str | None]]:
    """{contact id: (address, own time zone)}: where each one's legal hours are read."""
    query = select(contacts.c.id, contacts.c.address, contacts.c.timezone).where(
        contacts.c.id.in_(list(contact_ids))
    )
    return {int(i): (str(a), tz) for i, a, tz in session.execute(query)}
