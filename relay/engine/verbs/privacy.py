"""A person's data: export everything held about them, or erase it for good.

``relay contact export`` gathers every row about a contact
(:mod:`relay.store.person_rows`) as one JSON document. ``relay contact erase``
first opts the contact out and waits for the sends in flight (as ``relay
contact opt-out`` does: nothing is handed to a channel once it goes on), then
deletes those rows in one transaction and keeps only a keyed hash of each
address (:mod:`relay.core.suppression`), so a later ``start`` or ``import``
naming the address is refused: "erased on DATE". Both are audited; the erase's
record names no address.

The key is read from the environment variable ``[compliance] erasure_key_env``
names; without it nothing is erased, and while erasures are on record a start
cannot be checked, so it is refused rather than risk contacting an erased
person (see docs/compliance.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from relay.core.errors import ConfigError, Erased, NotFound
from relay.core.suppression import MIN_KEY_LENGTH, address_hash, key_id
from relay.engine.contacts.addresses import normalise_address
from relay.engine.conversation import audit
from relay.store import contacts, person_rows

if TYPE_CHECKING:
    from relay.engine.runtime import Runtime


@dataclass(frozen=True)
class Erasure:
    """What ``relay contact erase`` did: rows deleted per table, addresses suppressed."""

    contact: str
    erased_at: datetime
    found: bool
    deleted: dict[str, int]
    suppressed: int

    def to_json(self) -> dict[str, Any]:
        return {
            "contact": self.contact,
            "erased_at": self.erased_at.isoformat(),
            "found": self.found,
            "deleted": self.deleted,
            "suppressed": self.suppressed,
        }


def _key(runtime: Runtime, *, needed: bool) -> bytes | None:
    name = runtime.config.settings.compliance.erasure_key_env
    value = os.environ.get(name, "")
    if not value:
        if needed:
            raise ConfigError(
                f"erasing needs a key: set {name} (at least {MIN_KEY_LENGTH} characters, kept "
                "secret and the same for every relay on this store)"
            )
        return None
    if len(value) < MIN_KEY_LENGTH:
        raise ConfigError(f"{name} is shorter than {MIN_KEY_LENGTH} characters")
    return value.encode("utf-8")


def _addresses(session: Session, runtime: Runtime, contact: str) -> tuple[str, Any, list[str]]:
    """The normalised address, its contact row (or None) and every address of it."""
    address = normalise_address(contact, runtime.config.settings.defaults.region).value
    person = contacts.by_address(session, address)
    if person is None:
        return address, None, [address]
    addresses = [address, *person_rows.alias_addresses(session, person.id)]
    return address, person, list(dict.fromkeys(addresses))


def export_contact(runtime: Runtime, contact: str) -> dict[str, Any]:
    """Everything held about ``contact`` as one JSON document (schema:
    relay/schemas/contact-export.json); the export itself is audited.
    ``Relay.export_contact``, ``relay contact export``."""
    actor = _actor(runtime)
    with runtime.store.transaction() as session:
        address, person, addresses = _addresses(session, runtime, contact)
        if person is None:
            raise NotFound(f"no contact {address}")
        rows = person_rows.person_rows(session, person.id, addresses)
        now = runtime.now()
        audit.record(session, "contact export", None, {"contact": address}, now, actor=actor)
    return {
        "exported_at": now.isoformat(),
        "contact": rows.contact,
        "addresses": addresses,
        "consent": {"text": person.consent, "recorded_at": _iso(person.consent_at)},
        **rows.tables,
    }


def erase_contact(runtime: Runtime, contact: str) -> Erasure:
    """Delete everything about ``contact`` (one transaction) and suppress its addresses
    (``Relay.erase_contact``, ``relay contact erase``)."""
    actor = _actor(runtime)
    key = _key(runtime, needed=True)
    assert key is not None
    with runtime.store.transaction() as session:
        address, person, _ = _addresses(session, runtime, contact)
        contact_id = person.id if person is not None else None
        if person is not None:
            from relay.engine.contacts import optouts

            optouts.opt_out(session, person, runtime.now(), reason="erasure requested")
    since = runtime.now()
    if contact_id is not None:
        from relay.engine.contacts import settling

        settling.settle(runtime.store, contact_id, since, runtime.now)
    with runtime.store.transaction() as session:
        person_rows.secure_delete(session)
        address, person, addresses = _addresses(session, runtime, contact)
        if person is not None:
            contacts.lock(session, person.id)
        deleted = person_rows.delete_person(session, person.id if person else None, addresses)
        now = runtime.now()
        hashes = [address_hash(key, a) for a in addresses]
        person_rows.record_erasure(session, hashes, key_id(key), now)
        args = {"erased": hashes[0][:12], "rows": sum(deleted.values())}
        audit.record(session, "contact erase", None, args, now, actor=actor)
    deleted = {table: count for table, count in deleted.items() if count}
    return Erasure(address, now, person is not None, deleted, len(hashes))


def refuse_erased(session: Session, runtime: Runtime, address: str) -> None:
    """Raise :class:`Erased` if ``address`` was erased (``start``)."""
    when = erased_among(session, runtime, [address]).get(address)
    if when is not None:
        raise Erased(f"contact {address} was erased on {when.date().isoformat()}: relay does not "
                     "contact it again")  # fmt: skip


def erased_among(session: Session, runtime: Runtime, addresses: list[str]) -> dict[str, datetime]:
    """{address: erased on} for those of ``addresses`` erased; a :class:`ConfigError` when
    erasures are on record but the key to check them is missing or another one."""
    key = _key(runtime, needed=False)
    if key is None:
        if person_rows.other_key_on_record(session, None):
            name = runtime.config.settings.compliance.erasure_key_env
            raise ConfigError(
                f"erased contacts are on record but {name} is not set: relay cannot tell "
                "whether this address was erased"
            )
        return {}
    hashes = {address_hash(key, a): a for a in addresses}
    found = person_rows.erased_at(session, hashes)
    if len(found) < len(hashes) and person_rows.other_key_on_record(session, key_id(key)):
        name = runtime.config.settings.compliance.erasure_key_env
        raise ConfigError(f"{name} is not the key the store's erasures were made with: restore it")
    return {hashes[h]: at for h, at in found.items()}


def _actor(runtime: Runtime) -> str:
    """Who runs the command, for the audit log: the relay's actor, else the OS user."""
    from relay.engine.runtime import os_user

    return getattr(runtime, "actor", None) or os_user()


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None
