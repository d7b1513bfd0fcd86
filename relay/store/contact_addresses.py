"""A contact's addresses: one of each kind (phone, email, telegram), its own among them.

``contacts.address`` stays the contact's identity (what commands name it by);
``contact_addresses`` holds it too, with the others, so that a message from any
of them finds the one person. The unique address is the last word when two
commands give one address to two contacts at once.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from relay.store.models import ContactAddress

if TYPE_CHECKING:
    from relay.store.models import Contact


def contact_id_for(session: Session, address: str) -> int | None:
    """The contact one of whose addresses ``address`` is."""
    query = select(ContactAddress.contact_id).where(ContactAddress.address == address)
    return session.scalar(query)


def contact_ids_for(session: Session, addresses: Collection[str]) -> dict[str, int]:
    """``{address: contact id}`` for those of ``addresses`` some contact has."""
    if not addresses:
        return {}
    query = select(ContactAddress.address, ContactAddress.contact_id).where(
        ContactAddress.address.in_(list(addresses))
    )
    return {str(address): int(contact_id) for address, contact_id in session.execute(query)}


def of_contact(session: Session, contact_id: int) -> dict[str, str]:
    """``{kind: address}`` of one contact."""
    query = select(ContactAddress.kind, ContactAddress.address).where(
        ContactAddress.contact_id == contact_id
    )
    return {str(kind): str(address) for kind, address in session.execute(query)}


def of_contacts(session: Session, contact_ids: Collection[int]) -> dict[tuple[int, str], str]:
    """``{(contact id, kind): address}`` for many contacts (a dispatcher's batch)."""
    if not contact_ids:
        return {}
    query = select(ContactAddress.contact_id, ContactAddress.kind, ContactAddress.address).where(
        ContactAddress.contact_id.in_(sorted(contact_ids))
    )
    return {(int(i), str(k)): str(a) for i, k, a in session.execute(query)}


def own(person: Contact, now: datetime) -> ContactAddress:
    """The row of the contact's own address (written with the contact)."""
    return ContactAddress(
        contact_id=person.id, kind=person.kind, address=person.address, created_at=now
    )


def put(session: Session, contact_id: int, kind: str, address: str, now: datetime) -> None:
    """Make ``address`` the contact's address of its kind (replacing the one it had)."""
    session.execute(
        delete(ContactAddress).where(
            ContactAddress.contact_id == contact_id, ContactAddress.kind == kind
        )
    )
    session.add(ContactAddress(contact_id=contact_id, kind=kind, address=address, created_at=now))
    session.flush()
