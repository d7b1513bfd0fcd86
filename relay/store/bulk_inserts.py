"""Many rows in one statement per table, for ``relay import``
(``relay.engine.verbs.bulk`` builds the rows)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session

from relay.store import events
from relay.store.models import Contact, ContactAddress, Instance, Todo


def insert_contacts(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    session.execute(insert(Contact), rows)


def insert_contact_addresses(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """The own-address rows of contacts just inserted (see ``contact_addresses``)."""
    if rows:
        session.execute(insert(ContactAddress), rows)


def insert_conversations(
    session: Session,
    instances: Sequence[dict[str, Any]],
    todos: Sequence[dict[str, Any]],
    changes: Sequence[dict[str, Any]],
) -> None:
    """Conversations with their todos and their creations' state-change rows (those
    go in with the transaction's other events, at its commit); a unique index
    broken by the batch raises (the caller then goes one row at a time)."""
    session.execute(insert(Instance), instances)
    if todos:
        session.execute(insert(Todo), todos)
    for row in changes:
        events.add(session, row)
