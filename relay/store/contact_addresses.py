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

from sqlalchemy import delete, insert, select, update
from sqlalchemy.orm import Session

from relay.store.tables import contact_addresses as addresses

if TYPE_CHECKING:
    from relay.store.models import Contact


def contact_id_for(session: Session, address: str) -> int | None:
    """The contact one of whose addresses ``address`` is."""
    query = select(addresses.c.contact_id).where(addresses.c.address == address)
    return session.scalar(query)


def contact_ids_for(session: Session, wanted: Collection[str]) -> dict[str, int]:
    """``{address: contact id}`` for those of ``wanted`` some contact has."""
    if not wanted:
        return {}
    query = select(addresses.c.address, addresses.c.contact_id).where(
        addresses.c.address.in_(list(wanted))
    )
    return {str(address): int(contact_id) for address, contact_id in session.execute(query)}


def of_contact(session: Session, contact_id: int) -> dict[str, str]:
    """``{kind: address}`` of one contact."""
    query = select(addresses.c.kind, addresses.c.address).where(
        addresses.c.contact_id == contact_id
    )
    return {str(kind): str(address) for kind, address in session.execute(query)}


def of_contacts(session: Session, contact_ids: Collection[int]) -> dict[tuple[int, str], str]:
    """``{(contact id, kind): address}`` for many contacts (a dispatcher's batch)."""
    if not contact_ids:
        return {}
    query = select(addresses.c.contact_id, addresses.c.kind, addresses.c.address).where(
        addresses.c.contact_id.in_(sorted(contact_ids))
    )
    return {(int(i), str(k)): str(a) for i, k, a in session.execute(query)}


def add_own(session: Session, person: Contact, now: datetime) -> None:
    """The row of a new contact's own address (written with the contact)."""
    row = {"contact_id": person.id, "kind": person.kind, "address": person.address}
    session.execute(insert(addresses).values(**row, created_at=now))


def put(session: Session, contact_id: int, kind: str, address: str, now: datetime) -> None:
    """Make ``address`` the contact's address of its kind (replacing the one it had).
    Giving the same address again keeps its row, and so its opt-out: only a new
    address of the kind is asked afresh."""
    same = select(addresses.c.address).where(
        addresses.c.contact_id == contact_id, addresses.c.kind == kind
    )
    if session.scalar(same) == address:
        return
    session.execute(
        delete(addresses).where(addresses.c.contact_id == contact_id, addresses.c.kind == kind)
    )
    row = {"contact_id": contact_id, "kind": kind, "address": address, "created_at": now}
    session.execute(insert(addresses).values(**row))


def opted_out_kinds(session: Session, contact_ids: Collection[int]) -> set[tuple[int, str]]:
    """``{(contact id, kind)}`` opted out by kind (``[compliance] optout_scope``)."""
    if not contact_ids:
        return set()
    query = select(addresses.c.contact_id, addresses.c.kind).where(
        addresses.c.contact_id.in_(sorted(contact_ids)), addresses.c.opted_out_at.is_not(None)
    )
    return {(int(i), str(k)) for i, k in session.execute(query)}


def opt_outs_of(session: Session, contact_id: int) -> dict[str, datetime]:
    """``{kind: when}`` of the kinds the contact opted out of."""
    query = select(addresses.c.kind, addresses.c.opted_out_at).where(
        addresses.c.contact_id == contact_id, addresses.c.opted_out_at.is_not(None)
    )
    return {str(kind): at for kind, at in session.execute(query)}


def mark_opted_out(
    session: Session, contact_id: int, kind: str, now: datetime, reason: str
) -> bool:
    """Opt the contact out of its address of ``kind`` (kept if already out); False
    if it has none of that kind (the caller then opts the whole contact out)."""
    found = select(addresses.c.opted_out_at).where(
        addresses.c.contact_id == contact_id, addresses.c.kind == kind
    )
    row = session.execute(found).first()
    if row is None:
        return False
    if row[0] is None:
        session.execute(
            update(addresses)
            .where(addresses.c.contact_id == contact_id, addresses.c.kind == kind)
            .values(opted_out_at=now, opt_out_reason=reason)
        )
    return True


def clear_opt_outs(session: Session, contact_id: int, kind: str | None = None) -> None:
    """Opt the contact back in on ``kind`` (None: every kind)."""
    query = update(addresses).where(addresses.c.contact_id == contact_id)
    if kind is not None:
        query = query.where(addresses.c.kind == kind)
    session.execute(query.values(opted_out_at=None, opt_out_reason=None))
