"""Every migration downgrades and upgrades a database full of data without losing a
row the older schema can hold (issue 32), on SQLite and PostgreSQL.

A store at head is seeded through the API (conversations with todos, messages
both ways, transitions, events, a cancelled one); then, for each earlier
revision, it goes down to it and back up to head, and every row of every table
the older schema has, in every column that revision has, is compared. On SQLite
a batch operation rebuilds a table: with foreign keys on, dropping ``instances``
cascade-deleted every todo, message and transition."""

from __future__ import annotations

from typing import Any

from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text

from relay.runner.pulse import Pulse
from relay.store import migrate
from relay.store.database import HEAD_REVISION, Store

Snapshot = dict[str, dict[str, Any]]


def seed(relay: Any) -> None:
    ids = [
        relay.start(
            f"+1555123000{n}", f"the delivery of order {n}", ["Which day?", "Which time?"]
        ).id
        for n in range(3)
    ]
    Pulse(relay, "seed").run()
    relay.receive("+15551230000", "Thursday, in the morning")
    relay.receive("+15551230001", "STOP")
    Pulse(relay, "seed").run()
    relay.cancel(ids[2])


def snapshot(store: Store) -> Snapshot:
    """{table: {"columns": [...], "rows": [...]}} for every table but bookkeeping."""
    found: Snapshot = {}
    with store.engine.connect() as conn:
        inspector = inspect(conn)
        for table in inspector.get_table_names():
            if table in {"alembic_version", "daemons"}:
                continue
            columns = sorted(c["name"] for c in inspector.get_columns(table))
            quoted = ", ".join(f'"{c}"' for c in columns)
            rows = conn.execute(text(f'SELECT {quoted} FROM "{table}"')).all()
            found[table] = {"columns": columns, "rows": rows}
    return found


def restricted(full: Snapshot, shape: Snapshot) -> dict[str, list[tuple[str, ...]]]:
    """``full``'s rows, only the tables and columns ``shape`` has, comparable."""
    out = {}
    for table, older in shape.items():
        columns = full[table]["columns"]
        keep = [columns.index(c) for c in older["columns"] if c in columns]
        out[table] = sorted(tuple(_plain(row[i]) for i in keep) for row in full[table]["rows"])
    return out


def _plain(value: Any) -> str:
    if hasattr(value, "isoformat"):
        value = value.replace(tzinfo=None).isoformat() if hasattr(value, "tzinfo") else value
    return str(value)


def test_down_to_every_revision_and_back_keeps_every_row(
    make_relay: Any, db_url: str, clock: Any
) -> None:
    relay = make_relay(db_url, clock, **{"channels.console.echo": False})
    seed(relay)
    store = relay.store
    before = snapshot(store)
    counts = {t: len(before[t]["rows"]) for t in ("instances", "todos", "messages", "transitions")}
    assert all(counts.values()), counts
    script = ScriptDirectory.from_config(migrate.alembic_config(store))
    revisions = [r.revision for r in script.walk_revisions() if r.revision != HEAD_REVISION]
    assert revisions
    for revision in revisions:  # newest first
        migrate.downgrade(store, revision)
        assert store.revision() == revision
        down = snapshot(store)
        assert restricted(before, down) == restricted(down, down), f"lost going down to {revision}"
        migrate.upgrade(store, "head")
        up = snapshot(store)
        assert restricted(up, down) == restricted(down, down), f"lost coming up from {revision}"
    assert {t: len(snapshot(store)[t]["rows"]) for t in counts} == counts
