"""``among``: one parameter for the values (a JSON array on SQLite, an array on
PostgreSQL), the same rows."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import insert, select

from relay.store.hotpath.among import among
from relay.store.models import EventRow, table_of
from relay.store.opening import open_store

AT = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("wanted", [[], ["i3"], [f"i{n}" for n in range(0, 120, 2)]])
def test_among_finds_the_rows_whatever_the_number_of_values(db_url: str, wanted: list[str]) -> None:
    store = open_store(db_url)
    events = table_of(EventRow)
    with store.transaction() as session:
        session.execute(
            insert(events),
            [{"kind": "t", "instance_id": f"i{n}", "created_at": AT} for n in range(100)],
        )
        found = session.scalars(
            select(events.c.instance_id).where(among(session, events.c.instance_id, wanted))
        ).all()
    assert sorted(found) == sorted(w for w in wanted if int(w[1:]) < 100)


def test_one_parameter_whatever_the_batch(db_url: str) -> None:
    store = open_store(db_url)
    events = table_of(EventRow)
    with store.transaction() as session:
        statement = select(events.c.id).where(
            among(session, events.c.instance_id, [f"i{n}" for n in range(100)])
        )
        text = str(statement.compile(session.get_bind()))
    if store.dialect == "postgresql":
        assert "= ANY (" in text and text.count("%(") == 1
    else:
        assert "IN (SELECT value \nFROM json_each(?))" in text and text.count("?") == 1


def test_a_sqlite_without_json_functions_gets_the_in_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'relay.db'}", create=True)
    monkeypatch.setattr("relay.store.hotpath.among.sqlite_has_json_each", lambda: False)
    events = table_of(EventRow)
    rows = [{"kind": "t", "instance_id": f"i{n}", "created_at": AT} for n in range(5)]
    with store.transaction() as session:
        session.execute(insert(events), rows)
        statement = select(events.c.instance_id).where(
            among(session, events.c.instance_id, ["i1", "i3", "i9"])
        )
        assert "json_each" not in str(statement.compile(session.get_bind()))
        assert sorted(session.scalars(statement)) == ["i1", "i3"]
