"""SQLite plans for the batch queries that pass their ids as one JSON array
(:mod:`relay.store.hotpath.among`): each value is looked up in an index, never a scan
of the table, though SQLite cannot see how many values the array holds."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import event

from relay.testing import Harness


def test_every_batch_lookup_searches_an_index(
    make_relay: Callable[..., Any], clock: Any, tmp_path: Path, _sqlite_template: Path
) -> None:
    database = tmp_path / "relay.db"
    shutil.copyfile(_sqlite_template, database)
    relay = make_relay(f"sqlite:///{database}", clock, **{"channels.console.echo": False})
    harness = Harness(relay, clock, relay.config.data_dir)
    seen: dict[str, tuple[Any, ...]] = {}

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if "json_each" in statement:
            seen.setdefault(statement, tuple(parameters))

    event.listen(relay.store.engine, "before_cursor_execute", record)
    ids = [harness.start(f"+1555020000{n}") for n in range(3)]
    harness.start("+15550200000", objective="queued behind the first")
    harness.tick()  # first turns and their deliveries
    clock.advance(timedelta(hours=1))
    harness.tick()  # heartbeats fire: follow-ups
    relay.cancel(ids[0])  # the queued conversation takes the contact's slot
    harness.tick()
    event.remove(relay.store.engine, "before_cursor_execute", record)

    assert len(seen) >= 8, sorted(seen)
    connection = relay.store.engine.raw_connection()
    try:
        for statement, parameters in seen.items():
            explained = connection.cursor().execute(f"EXPLAIN QUERY PLAN {statement}", parameters)
            plan = [row[3] for row in explained]
            scans = [step for step in plan if step.startswith("SCAN ") and "json_each" not in step]
            assert not [s for s in scans if _is_table(s)], (statement, plan)
    finally:
        connection.close()


def _is_table(step: str) -> bool:
    """``SCAN messages`` or ``SCAN messages USING INDEX ...``: a pass over a table or
    a whole index (a subquery's own rows, ``SCAN ranked``, are not a table)."""
    name = step.split()[1]
    return name in TABLES


TABLES = {"instances", "messages", "todos", "contacts", "contact_aliases", "state_entries"}
