"""Contacts: the one place a contact row is found or created.

Two commands about one new address can race (a ``relay start`` and an inbound
message, say); the unique address decides, and the loser uses the winner's row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from relay.core.errors import InvalidInput, NotFound
from relay.engine.contacts.addresses import Address
from relay.store import contact_addresses, queries

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
        if address.name and not (found.fields or {}).get("name"):
            found.fields = {**(found.fields or {}), "name": address.name}  # "Ana <ana@x.com>"
            found.updated_at = now
        return found
    contact = Contact(address=address.value, kind=address.kind, created_at=now, updated_at=now)
    if address.name:
        contact.fields = {"name": address.name}
    try:
        with session.begin_nested():
            session.add(contact)
            session.flush()
            contact_addresses.add_own(session, contact, now)
    except IntegrityError:
        existing = queries.contact_by_address(session, address.value)
        if existing is None:
            raise
        return existing
    return contact


def add_address(session: Session, person: Contact, address: Address, now: datetime) -> bool:
    """Give the contact ``address`` as its address of that kind (replacing the one it
    had); whether anything changed. Its own address (its identity) stays: another of
    that kind is refused, as is an address another contact has."""
    if address.value == person.address:
        return False
    if address.kind == person.kind:
        raise InvalidInput(
            f"contact {person.address} is known by its {address.kind}; "
            f"{address.value} cannot be its {address.kind} too"
        )
    owner = contact_addresses.contact_id_for(session, address.value)
    if owner == person.id:
        return False
    if owner is not None:
        raise InvalidInput(f"{address.value} is another contact's address")
    contact_addresses.put(session, person.id, address.kind, address.value, now)
    person.updated_at = now
    return True


#: The kinds of address a contact has one of each.
KINDS = ("phone", "email", "telegram")


def checked_addresses(
    normalise: Callable[[str], Address], given: Mapping[str, str]
) -> list[Address]:
    """``{kind: text}`` (``relay contact set --email ...``) normalised, each of the kind
    it is given as; refused (nothing written) otherwise."""
    found = []
    for kind, text in given.items():
        if kind not in KINDS:
            raise InvalidInput(f"unknown kind of address {kind!r} (known: {', '.join(KINDS)})")
        try:
            address = normalise(text if kind != "telegram" or ":" in text else f"telegram:{text}")
        except InvalidInput as exc:
            raise InvalidInput(f"--{kind} {text!r}: {exc.message}") from None
        if address.kind != kind:
            raise InvalidInput(f"--{kind} {text!r} is a {address.kind} address, not {kind}")
        found.append(address)
    return found


def set_addresses(
    session: Session, person: Contact, addresses: Sequence[Address], now: datetime
) -> dict[str, str]:
    """Give the contact these addresses (:func:`add_address`); those that changed."""
    return {a.kind: a.value for a in addresses if add_address(session, person, a, now)}
