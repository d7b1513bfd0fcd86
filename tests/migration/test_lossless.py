"""Every migration downgrades and upgrades a database full of data without losing a
row the older schema can hold (issue 32), on SQLite and PostgreSQL.

A store at head is seeded through the API (conversations with todos, messages
both ways, state changes, events, a cancelled one); it goes down to 0019 (the
transition log and the event log apart again) and back up, every row coming back
with its id; then, for each earlier revision, it goes down to it and back up to
0019, and every row of every table the older schema has, in every column that
revision has, is compared. On SQLite
a batch operation rebuilds a table: with foreign keys on, dropping ``instances``
cascade-deleted every todo, message and transition."""

from __future__ import annotations

from typing import Any

from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text

from relay.runner.pulse import Pulse
from relay.store import migrate
from relay.store.database import Store

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


#: The last revision with the transition log and the event log apart (0020 folds them).
APART = "0019"


def test_down_to_every_revision_and_back_keeps_every_row(
    make_relay: Any, db_url: str, clock: Any
) -> None:
    relay = make_relay(db_url, clock, **{"channels.console.echo": False})
    seed(relay)
    store = relay.store
    before = snapshot(store)
    counts = {t: len(before[t]["rows"]) for t in ("instances", "todos", "messages", "events")}
    assert all(counts.values()), counts
    history = [relay.history(i.id) for i in relay.instances()]
    feed = [e.to_json() for e in relay.events()]
    apart = _two_logs_and_back(store, before)
    assert [relay.history(i.id) for i in relay.instances()] == history
    assert [e.to_json() for e in relay.events()] == feed
    script = ScriptDirectory.from_config(migrate.alembic_config(store))
    revisions = [r.revision for r in script.walk_revisions()]
    older = revisions[revisions.index(APART) + 1 :]
    assert older
    migrate.downgrade(store, APART)
    for revision in older:  # newest first
        migrate.downgrade(store, revision)
        assert store.revision() == revision
        down = snapshot(store)
        assert restricted(apart, down) == restricted(down, down), f"lost going down to {revision}"
        migrate.upgrade(store, APART)
        up = snapshot(store)
        assert restricted(up, down) == restricted(down, down), f"lost coming up from {revision}"
    migrate.upgrade(store, "head")
    kept = ("instances", "todos", "messages")  # below 0004 there were no events
    assert {t: len(snapshot(store)[t]["rows"]) for t in kept} == {t: counts[t] for t in kept}


def _two_logs_and_back(store: Store, before: Snapshot) -> Snapshot:
    """Down to :data:`APART`: each state change both a transition and a listed event,
    as relay wrote them there; up again: every row back with its id. The store
    at :data:`APART`."""
    migrate.downgrade(store, APART)
    apart = snapshot(store)
    columns = before["events"]["columns"]
    changes = sorted(
        tuple(_plain(row[columns.index(c)]) for c in _CHANGE)
        for row in before["events"]["rows"]
        if row[columns.index("to_state")] is not None
    )
    assert changes
    logged = apart["transitions"]
    assert sorted(
        tuple(_plain(row[logged["columns"].index(c)]) for c in _CHANGE) for row in logged["rows"]
    ) == changes
    assert len(apart["events"]["rows"]) == len(before["events"]["rows"])
    migrate.upgrade(store, "head")
    assert restricted(snapshot(store), before) == restricted(before, before)
    return apart


_CHANGE = ("instance_id", "from_state", "to_state", "event", "actor", "reason", "created_at")


def test_a_transition_without_its_event_is_history_only(
    make_relay: Any, db_url: str, clock: Any
) -> None:
    """A transition with no event (a bulk import's creation before 0020, or one from
    before the event log) comes up as a row below every cursor: in ``relay
    history``, first, and not in ``relay events``; and goes down as it was."""
    relay = make_relay(db_url, clock, **{"channels.console.echo": False})
    first = relay.start("+15551230000", "the delivery", ["Which day?"]).id
    store = relay.store
    migrate.downgrade(store, APART)
    with store.engine.begin() as conn:
        conn.execute(text("DELETE FROM transitions"))
        conn.execute(text("DELETE FROM events WHERE kind = 'state.changed'"))
        conn.execute(
            text(
                "INSERT INTO transitions (instance_id, from_state, to_state, event, actor, "
                "created_at) VALUES (:i, NULL, 'CREATED', 'start', 'import', :at)"
            ),
            {"i": first, "at": clock.now()},
        )
    apart = snapshot(store)
    migrate.upgrade(store, "head")
    relay.pause(first)
    logged = [(h.event, h.actor) for h in relay.history(first)]
    assert logged == [("start", "import"), ("pause", "operator")]
    assert [e.data["event"] for e in relay.events() if e.kind == "state.changed"] == ["pause"]
    migrate.downgrade(store, APART)
    # Renumbered in order (no command shows a transition's id).
    assert _without_id(snapshot(store))[0] == _without_id(apart)[0]


def _without_id(store: Snapshot) -> list[tuple[str, ...]]:
    logged = store["transitions"]
    keep = [i for i, column in enumerate(logged["columns"]) if column != "id"]
    return sorted(tuple(_plain(row[i]) for i in keep) for row in logged["rows"])
