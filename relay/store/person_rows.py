"""Everything the store holds about one person, to export it or to erase it.

One place knows which rows mention a contact: its own row, its bound chats, its
conversations with their todos and scoped state, every message to or from it (a
conversation's or unrouted), the events that name one of these or one of its
addresses (their state changes among them), and the inbound rejected from one of
its addresses.
``relay contact export`` reads them (:func:`person_rows`); ``relay contact
erase`` deletes the same rows in one transaction (:func:`delete_person`).

Events carry no message text (:mod:`relay.engine.conversation.transitions`); those
without a conversation (a contact-level command, a message that matched none)
are found by the message ids and addresses in their data, read in Python: the
JSON column has no portable "contains" across SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from sqlalchemy import ColumnElement, Table, delete, func, or_, select, text
from sqlalchemy.orm import Session

from relay.store.tables import (
    contact_addresses,
    contact_aliases,
    contacts,
    erasures,
    events,
    inbound_rejects,
    instances,
    messages,
    state_entries,
    todos,
)

#: Rows read per round trip while looking through events without a conversation.
_EVENT_BATCH = 1000


@dataclass
class PersonRows:
    """The rows about one person, table by table, as plain JSON-ready dicts."""

    contact: dict[str, Any] | None
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def plain(row: Mapping[Any, Any]) -> dict[str, Any]:
    """A row as JSON: times and dates in ISO 8601, everything else as stored."""
    return {str(k): v.isoformat() if isinstance(v, date) else v for k, v in row.items()}


@dataclass(frozen=True)
class _Scope:
    """Which rows belong to the person: the WHERE clause of each table."""

    contact_id: int | None
    instance_ids: list[str]
    message_ids: list[int]
    event_ids: list[int]
    reject_ids: list[int]

    def where(self) -> dict[Table, ColumnElement[bool]]:
        scoped = [
            (state_entries.c.scope == "instance") & state_entries.c.scope_id.in_(self.instance_ids)
        ]
        if self.contact_id is not None:
            scoped.append(
                (state_entries.c.scope == "contact")
                & (state_entries.c.scope_id == str(self.contact_id))
            )
        return {
            state_entries: or_(*scoped),
            events: events.c.id.in_(self.event_ids),
            todos: todos.c.instance_id.in_(self.instance_ids),
            messages: messages.c.id.in_(self.message_ids),
            instances: instances.c.id.in_(self.instance_ids),
            contact_aliases: contact_aliases.c.contact_id == (self.contact_id or -1),
            contact_addresses: contact_addresses.c.contact_id == (self.contact_id or -1),
            inbound_rejects: inbound_rejects.c.id.in_(self.reject_ids),
            contacts: contacts.c.id == (self.contact_id or -1),
        }


def alias_addresses(session: Session, contact_id: int) -> list[str]:
    """The contact's other addresses: its bound chats and the addresses of other kinds
    (``relay contact set --email/--phone/--telegram``); each is suppressed on erase."""
    chats = select(contact_aliases.c.address).where(contact_aliases.c.contact_id == contact_id)
    kinds = select(contact_addresses.c.address).where(
        contact_addresses.c.contact_id == contact_id
    )
    found = [*session.scalars(chats), *session.scalars(kinds)]
    return list(dict.fromkeys(str(a) for a in found))


def _scope(session: Session, contact_id: int | None, addresses: Sequence[str]) -> _Scope:
    instance_ids: list[str] = []
    message_ids: list[int] = []
    if contact_id is not None:
        instance_ids = list(
            session.scalars(select(instances.c.id).where(instances.c.contact_id == contact_id))
        )
        message_ids = [
            int(i)
            for i in session.scalars(
                select(messages.c.id).where(messages.c.contact_id == contact_id)
            )
        ]
    return _Scope(
        contact_id,
        instance_ids,
        message_ids,
        _event_ids(session, instance_ids, set(message_ids), addresses),
        _reject_ids(session, addresses),
    )


def _event_ids(
    session: Session, instance_ids: list[str], message_ids: set[int], addresses: Sequence[str]
) -> list[int]:
    found = [int(i) for i in session.scalars(select(events.c.id).where(
        events.c.instance_id.in_(instance_ids)
    ))]  # fmt: skip
    needles = [a.lower() for a in addresses if a]
    last = 0
    while True:
        rows = session.execute(
            select(events.c.id, events.c.data)
            .where(events.c.instance_id.is_(None), events.c.id > last)
            .order_by(events.c.id)
            .limit(_EVENT_BATCH)
        ).all()
        if not rows:
            return found
        found += [int(i) for i, data in rows if _mentions(data, message_ids, needles)]
        last = int(rows[-1][0])


def _mentions(data: Any, message_ids: set[int], needles: list[str]) -> bool:
    if not data:
        return False
    if isinstance(data, dict) and data.get("message_id") in message_ids:
        return True
    text = json.dumps(data, ensure_ascii=False).lower()
    return any(needle in text for needle in needles)


def _reject_ids(session: Session, addresses: Sequence[str]) -> list[int]:
    if not addresses:
        return []
    sender = inbound_rejects.c.sender
    query = select(inbound_rejects.c.id).where(
        or_(*(sender.icontains(a, autoescape=True) for a in addresses))
    )
    return [int(i) for i in session.scalars(query)]


def person_rows(session: Session, contact_id: int | None, addresses: Sequence[str]) -> PersonRows:
    """Every row about the person, oldest first in each table."""
    scope = _scope(session, contact_id, addresses)
    where = scope.where()
    tables: dict[str, list[dict[str, Any]]] = {}
    for table, clause in where.items():
        order = list(table.primary_key.columns)
        rows = session.execute(select(table).where(clause).order_by(*order)).mappings()
        tables[table.name] = [plain(row) for row in rows]
    person = tables.pop("contacts")
    # The conversations' state changes, as ``transitions`` (the export's field
    # from before they were rows of ``events``, issue 31).
    tables["transitions"] = [
        {column: row[column] for column in _CHANGE_COLUMNS}
        for row in tables["events"]
        if row["to_state"] is not None and row["instance_id"] in scope.instance_ids
    ]
    return PersonRows(person[0] if person else None, tables)


#: A state change's fields in the export's ``transitions``.
_CHANGE_COLUMNS = (
    "id", "instance_id", "from_state", "to_state", "event", "actor", "reason", "created_at"
)  # fmt: skip


def delete_person(
    session: Session, contact_id: int | None, addresses: Sequence[str]
) -> dict[str, int]:
    """Delete every row about the person in the caller's transaction (children
    first: the foreign keys hold on both databases); how many rows per table."""
    scope = _scope(session, contact_id, addresses)
    changes = events.c.id.in_(scope.event_ids) & events.c.instance_id.in_(scope.instance_ids)
    counts = {"transitions": int(session.scalar(
        select(func.count()).where(changes, events.c.to_state.is_not(None))
    ) or 0)}  # fmt: skip
    for table, clause in scope.where().items():
        result = session.execute(delete(table).where(clause))
        counts[table.name] = int(result.rowcount or 0)  # type: ignore[attr-defined]
    return counts


def secure_delete(session: Session) -> None:
    """On SQLite, overwrite deleted content with zeros instead of leaving it in free
    pages of the file (the connection keeps the setting; it only costs writes)."""
    if session.get_bind().dialect.name == "sqlite":
        session.execute(text("PRAGMA secure_delete = ON"))


# -- suppression records ------------------------------------------------------------------


def erased_at(session: Session, hashes: Iterable[str]) -> dict[str, datetime]:
    """{hash: when it was erased} for those of ``hashes`` on record."""
    wanted = list(hashes)
    if not wanted:
        return {}
    query = select(erasures.c.address_hash, erasures.c.erased_at).where(
        erasures.c.address_hash.in_(wanted)
    )
    return {str(h): at for h, at in session.execute(query)}


def other_key_on_record(session: Session, key_id: str | None) -> bool:
    """Whether any record was made by another key than ``key_id`` (None: any key)."""
    query = select(erasures.c.key_id).limit(1)
    if key_id is not None:
        query = query.where(erasures.c.key_id != key_id)
    return session.scalar(query) is not None


def record_erasure(session: Session, hashes: Iterable[str], key_id: str, now: datetime) -> None:
    """Keep the suppression records (an address erased before keeps its first date)."""
    wanted = sorted(set(hashes))
    known = erased_at(session, wanted)
    rows = [
        {"address_hash": h, "key_id": key_id, "erased_at": now} for h in wanted if h not in known
    ]
    if rows:
        session.execute(erasures.insert(), rows)
