"""The hot path's batch writes (relay.store.hotpath.fast_writes) store what SQLAlchemy's own
``session.execute(statement, rows)`` stores, on SQLite and PostgreSQL: the same
text for times and JSON, NULLs, the columns' defaults; they flush the session
first as it did, and refuse rows whose keys differ instead of guessing."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import (
    Column,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    bindparam,
    cast,
    event,
    insert,
    select,
    update,
)
from sqlalchemy.dialects import sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from relay.store.hotpath import fast_writes
from relay.store.models import EventRow, Instance, Message, table_of
from relay.testing import PHONE, Harness

NOW = datetime(2026, 11, 23, 12, 0, 0, 123456, tzinfo=UTC)
#: The same instant in another zone: both paths store it as UTC.
ELSEWHERE = NOW.astimezone(timezone(timedelta(hours=-5, minutes=-30)))


def _stored(session: Session, table: Table) -> list[tuple[Any, ...]]:
    """Every row but its id, twice: as the driver returns the stored values, and
    each column cast to text by the database (the exact text of times and JSON)."""
    columns = [column for column in table.c if column.key != "id"]
    names = ", ".join(f'"{column.name}"' for column in columns)
    raw = session.connection().exec_driver_sql(f"SELECT {names} FROM {table.name} ORDER BY id")
    texts = session.execute(select(*(cast(c, Text) for c in columns)).order_by(table.c.id))
    return [(*r, *t) for r, t in zip(raw, texts, strict=True)]


def _names(table: Table) -> list[str]:
    return [column.key for column in table.c if column.key != "id"]


def _without(stored: list[tuple[Any, ...]], key: str) -> list[tuple[Any, ...]]:
    """The stored rows without one column (both its raw and its text value)."""
    names = _names(table_of(Message))
    width, index = len(names), names.index(key)
    return [tuple(v for i, v in enumerate(row) if i % width != index) for row in stored]


def _both_ways(session: Session, table: Table, rows: list[dict[str, Any]]) -> None:
    """Insert the rows with SQLAlchemy, then again with fast_writes; the two halves
    of the table must be equal."""
    session.execute(insert(table), rows)
    fast_writes.insert_rows(session, table, rows)
    stored = _stored(session, table)
    assert len(stored) == 2 * len(rows)
    assert stored[: len(rows)] == stored[len(rows) :]


def _contact(engine: Harness) -> tuple[str, int]:
    iid = engine.start(PHONE)
    with engine.relay.store.transaction() as session:
        contact = session.scalar(select(Instance.contact_id).where(Instance.id == iid))
    assert contact is not None
    return iid, contact


def _outbox_rows(iid: str, contact: int, count: int, tag: str = "") -> list[dict[str, Any]]:
    """As ``outgoing.outbound_row`` builds them: ``kind`` and the nullable
    bookkeeping columns left out."""
    return [
        {
            "instance_id": iid,
            "contact_id": contact,
            "direction": "outbound",
            "author": "agent",
            "body": f"hello {n} — ünïcode, 'quotes', %s %(x)s",
            "status": "queued",
            "channel": None if n % 2 else "console",
            "idempotency_key": f"key-{n}{tag}",
            "attempts": n,
            "next_attempt_at": None if n % 3 == 0 else ELSEWHERE + timedelta(microseconds=n),
            "proactive": n % 2,
            "created_at": NOW,
        }
        for n in range(count)
    ]


def test_inserts_store_what_sqlalchemy_stores(engine: Harness) -> None:
    iid, contact = _contact(engine)
    with engine.relay.store.transaction() as session:
        session.execute(table_of(EventRow).delete())
    changes = [
        {
            "kind": "state.changed",
            "data": None,
            "instance_id": iid,
            "from_state": None if n == 0 else "WAITING_FOR_REPLY",
            "to_state": "ACTIVE",
            "event": "heartbeat_fires",
            "actor": "heartbeat",
            "reason": None if n % 2 else f"follow-up {n} of 3",
            "created_at": ELSEWHERE if n % 2 else NOW,
        }
        for n in range(5)
    ]
    events = [
        {
            "kind": "state.changed",
            "instance_id": None if n == 2 else iid,
            "actor": "relay",
            "data": None if n == 3 else {"from": None, "to": "ACTIVE", "n": [n, 1.5, "é", True]},
            "created_at": NOW + timedelta(seconds=n),
        }
        for n in range(5)
    ]
    with engine.relay.store.transaction() as session:
        _both_ways(session, table_of(EventRow), changes)
        session.execute(table_of(EventRow).delete())
        _both_ways(session, table_of(EventRow), events)
    with engine.relay.store.transaction() as session:
        # Two distinct sets: the idempotency key is unique.
        session.execute(insert(table_of(Message)), _outbox_rows(iid, contact, 4, "a"))
        fast_writes.insert_rows(session, table_of(Message), _outbox_rows(iid, contact, 4, "b"))
        stored = _without(_stored(session, table_of(Message)), "idempotency_key")[-8:]
    assert stored[:4] == stored[4:]
    kind = _names(table_of(Message)).index("kind")
    assert {row[kind] for row in stored} == {"message"}  # default= for a key left out


def test_updates_by_id_store_what_sqlalchemy_stores(engine: Harness) -> None:
    iid, contact = _contact(engine)
    table = table_of(Message)
    with engine.relay.store.transaction() as session:
        session.execute(table.delete())
        for tag in "ab":
            session.execute(insert(table), _outbox_rows(iid, contact, 3, tag))
        ids = list(session.scalars(select(table.c.id).order_by(table.c.id)))
    keys = ("status", "provider_message_id", "sent_at", "next_attempt_at", "last_error")

    def params(of: list[int]) -> list[dict[str, Any]]:
        return [
            {
                "_id": message_id,
                "status": "sent",
                "provider_message_id": None if n % 2 else f"SM{n}",
                "sent_at": ELSEWHERE + timedelta(seconds=n),
                "next_attempt_at": None,
                "last_error": "x" * n or None,
            }
            for n, message_id in enumerate(of)
        ]

    statement = (
        update(table)
        .where(table.c.id == bindparam("_id"))
        .values({key: bindparam(key) for key in keys})
    )
    with engine.relay.store.transaction() as session:
        session.execute(statement, params(ids[:3]))
        matched = fast_writes.update_by_id(session, table, keys, params(ids[3:]))
        stored = _stored(session, table)
    assert matched == 3
    stored = _without(stored, "idempotency_key")  # the rows' only difference
    assert stored[:3] == stored[3:]


def test_pending_orm_changes_are_flushed_first(engine: Harness) -> None:
    """As ``session.execute`` of a Core statement autoflushes: a row changed on its
    ORM object and then by a batch keeps the batch's value."""
    iid = engine.start(PHONE)
    with engine.relay.store.transaction() as session:
        instance = session.scalar(select(Instance).where(Instance.id == iid))
        assert instance is not None
        instance.lease_owner = "orm"
        fast_writes.update_by_id(
            session, table_of(Instance), ["lease_owner"], [{"_id": iid, "lease_owner": "batch"}]
        )
    with engine.relay.store.transaction() as session:
        owner = session.scalar(select(Instance.lease_owner).where(Instance.id == iid))
    assert owner == "batch"


@pytest.mark.parametrize(
    "odd",
    [
        {"kind": "command", "instance_id": None, "actor": None, "data": None},  # a key short
        {
            "kind": "command",
            "instance_id": None,
            "actor": None,
            "data": None,
            "created_at": NOW,
            "extra": 1,
        },
        {"kind": "command", "instance_id": None, "actor": None, "data": None, "created": NOW},
    ],
)
def test_rows_with_other_keys_are_refused(engine: Harness, odd: dict[str, Any]) -> None:
    first = {"kind": "command", "instance_id": None, "actor": None, "data": None, "created_at": NOW}
    with engine.relay.store.transaction() as session, pytest.raises(ValueError, match="keys"):
        fast_writes.insert_rows(session, table_of(EventRow), [first, odd])


def test_database_errors_are_sqlalchemy_errors(engine: Harness) -> None:
    iid, contact = _contact(engine)
    rows = _outbox_rows(iid, contact, 2)
    rows[1]["idempotency_key"] = rows[0]["idempotency_key"]
    with pytest.raises(IntegrityError), engine.relay.store.transaction() as session:
        fast_writes.insert_rows(session, table_of(Message), rows)


def test_a_default_computed_per_row_is_refused() -> None:
    table = Table(
        "t",
        MetaData(),
        Column("id", Integer, primary_key=True),
        Column("a", String),
        Column("b", String, default=lambda: "computed"),
    )
    with pytest.raises(ValueError, match="'b' has a default computed per row"):
        fast_writes.shape_of(sqlite.dialect(), "insert", table, ("a",))
    shape = fast_writes.shape_of(sqlite.dialect(), "insert", table, ("a", "b"))
    assert shape.convert([{"a": "x", "b": None}]) == [("x", None)]


@contextmanager
def _statements(engine: Harness) -> Iterator[list[tuple[str, bool]]]:
    """The statements sent to the database meanwhile, each with whether it was an
    ``executemany``."""
    calls: list[tuple[str, bool]] = []

    def seen(conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool) -> None:
        calls.append((statement, many))

    event.listen(engine.relay.store.engine, "before_cursor_execute", seen)
    try:
        yield calls
    finally:
        event.remove(engine.relay.store.engine, "before_cursor_execute", seen)


def test_an_id_named_twice_is_updated_in_turn(engine: Harness) -> None:
    """As ``executemany`` applies the rows one after another, the last row for an id
    wins; PostgreSQL's one statement over arrays would pick one row arbitrarily,
    so such a batch is sent row by row there."""
    iid = engine.start(PHONE)
    rows = [{"_id": iid, "lease_owner": owner} for owner in ("first", "second", "last")]
    with _statements(engine) as calls, engine.relay.store.transaction() as session:
        fast_writes.update_by_id(session, table_of(Instance), ["lease_owner"], rows)
    with engine.relay.store.transaction() as session:
        owner = session.scalar(select(Instance.lease_owner).where(Instance.id == iid))
    assert owner == "last"
    assert [many for sql, many in calls if sql.startswith("UPDATE")] == [True]


def test_a_batch_is_one_statement(engine: Harness) -> None:
    """One database call per batch: ``executemany`` on SQLite, one statement over
    arrays on PostgreSQL (the server runs it once, not once per row)."""
    iid, contact = _contact(engine)
    with _statements(engine) as calls, engine.relay.store.transaction() as session:
        fast_writes.insert_rows(session, table_of(Message), _outbox_rows(iid, contact, 5))
    inserts = [(sql, many) for sql, many in calls if sql.startswith("INSERT")]
    assert len(inserts) == 1
    sql, many = inserts[0]
    if engine.relay.store.dialect == "postgresql":
        assert "unnest(" in sql and not many
    else:
        assert many
