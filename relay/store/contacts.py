"""A contact's reads and writes: found by address (its own or one of its others),
locked while a command decides on its slot, its address, time zone and what
arrived from it that matched no conversation."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from relay.store.tables import contacts, instances

if TYPE_CHECKING:
    from relay.store.models import Contact, Message


def unrouted_of(session: Session, contact_id: int) -> Sequence[Message]:
    """The contact's messages that belong to no conversation, oldest first."""
    from relay.store.models import Message

    return session.scalars(
        select(Message)
        .where(Message.contact_id == contact_id, Message.instance_id.is_(None))
        .order_by(Message.id)
    ).all()


def addresses_of(session: Session, contact_ids: Iterable[int]) -> dict[int, str]:
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


def by_address(session: Session, address: str) -> Contact | None:
    """The contact ``address`` names: its own address, else one of its others
    (:mod:`relay.store.contact_addresses`)."""
    from relay.store import contact_addresses
    from relay.store.models import Contact

    found = session.scalar(select(Contact).where(Contact.address == address))
    if found is not None:
        return found
    other = contact_addresses.contact_id_for(session, address)
    return session.get(Contact, other) if other is not None else None


def by_addresses(session: Session, addresses: Sequence[str]) -> dict[str, Contact]:
    """{address: contact} for those of ``addresses`` that name one: the many-row
    form of :func:`by_address`."""
    from relay.store.models import Contact

    if not addresses:
        return {}
    found = {
        c.address: c for c in session.scalars(select(Contact).where(Contact.address.in_(addresses)))
    }
    from relay.store import contact_addresses

    others = contact_addresses.contact_ids_for(session, set(addresses) - set(found))
    if others:
        people = session.scalars(select(Contact).where(Contact.id.in_(set(others.values()))))
        by_id = {c.id: c for c in people}
        found.update((address, by_id[i]) for address, i in others.items())
    return found


def lock(session: Session, contact_id: int) -> None:
    """Serialise the commands that decide who holds the contact's slot.

    A conversation that ends (and promotes the next in line) and a ``start`` that
    sees the slot taken (and queues) must not both decide on what they saw: under
    READ COMMITTED neither sees the other's uncommitted row, and a queued
    conversation could wait forever. Both take this lock first; on SQLite every
    transaction already holds the database's write lock.
    """
    session.execute(select(contacts.c.id).where(contacts.c.id == contact_id).with_for_update())


def lock_many(session: Session, contact_ids: Sequence[int]) -> dict[int, Any]:
    """Lock many contacts at once (in id order, so two imports cannot deadlock) and
    read what decides whether they may be written to: the many-row form of
    :func:`lock`."""
    if not contact_ids:
        return {}
    rows = session.execute(
        select(
            contacts.c.id,
            contacts.c.opted_out_at,
            contacts.c.undeliverable_at,
            contacts.c.undeliverable_reason,
        )
        .where(contacts.c.id.in_(sorted(contact_ids)))
        .order_by(contacts.c.id)
        .with_for_update()
    )
    return {row.id: row for row in rows}


def slots_taken(session: Session, contact_ids: Sequence[int]) -> set[int]:
    """Which of these contacts have a conversation holding their slot."""
    if not contact_ids:
        return set()
    return set(
        session.scalars(
            select(instances.c.contact_slot).where(instances.c.contact_slot.in_(contact_ids))
        )
    )
