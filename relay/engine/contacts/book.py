"""Contacts: the one place a contact row is found or created.

Two commands about one new address can race (a ``relay start`` and an inbound
message, say); the unique address decides, and the loser uses the winner's row.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from relay.core.errors import NotFound
from relay.engine.contacts.addresses import Address
from relay.store import queries

if TYPE_CHECKING:
    from relay.store.models import Contact


def find(session: Session, address: str) -> Contact:
    found = queries.contact_by_address(session, address)
    if found is None:
        raise NotFound(f"no contact {address}")
    return found


def find_or_create(session: Session, address: Address, now: datetime) -> Contact:
    from relay.store.models import Contact

    found = queries.contact_by_address(session, address.value)
    if found is not None:
        return found
    contact = Contact(address=address.value, kind=address.kind, created_at=now, updated_at=now)
    try:
        with session.begin_nested():
            session.add(contact)
            session.flush()
    except IntegrityError:
        existing = queries.contact_by_address(session, address.value)
        if existing is None:
            raise
        return existing
    return contact
