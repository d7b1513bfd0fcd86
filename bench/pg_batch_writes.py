"""A batch of rows written to PostgreSQL two ways: psycopg's pipelined
``executemany`` of the per-row statement (what SQLAlchemy does, and what
``relay/store/hotpath/fast_writes.py`` did before the sixth pass), and the one statement
over binary arrays fast_writes sends now (``unnest``).

Both run on a throwaway database with relay's schema, through a plain psycopg
connection, with the statement texts relay itself builds: the events log's
INSERT, and the outbox's "recorded as sent" UPDATE by id. Reported per row:
wall time, the client's CPU (this process) and the server's (the backend
process, from /proc), medians over the rounds.

    python bench/pg_batch_writes.py --database postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import psycopg
from benchlib import cpu_seconds, emit, machine, throwaway_store
from psycopg.types.json import Json
from sqlalchemy import bindparam, create_engine, insert, update
from sqlalchemy.engine import make_url

from relay.store.hotpath import fast_writes
from relay.store.tables import events, messages


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", required=True, help="PostgreSQL server URL")
    parser.add_argument("--batch", type=int, default=100, help="rows per statement")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=200, help="batches per round")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with throwaway_store(args.database) as bench:
        figures = run(bench.url, args)
    figures["machine"] = machine()
    table = [
        (f"{kind}, {way} (us per row: wall / client / server)",
         " / ".join(f"{figures[f'{kind}_{way}_{part}_us']:.1f}"
                    for part in ("wall", "client", "server")))
        for kind in ("insert", "update") for way in ("executemany", "arrays")
    ]
    emit(figures, args.json, table)
    return 0


def run(url: str, args: argparse.Namespace) -> dict[str, Any]:
    dialect = create_engine(make_url(url).set(drivername="postgresql+psycopg")).dialect
    plain = make_url(url).set(drivername="postgresql").render_as_string(False)
    figures: dict[str, Any] = {"batch": args.batch}
    with psycopg.connect(plain) as conn:
        ids = _seed_messages(conn, args.batch)
        now = datetime.now(UTC)
        event_rows = [
            {"kind": "state", "instance_id": None, "actor": "heartbeat", "created_at": now,
             "data": Json({"from": "WAITING_FOR_REPLY", "to": "ACTIVE", "reason": None})}
            for _ in range(args.batch)
        ]
        sent_rows = [
            {"status": "sent", "provider_message_id": f"console-{n}", "sent_at": now,
             "next_attempt_at": None, fast_writes.ID_KEY: message_id}
            for n, message_id in enumerate(ids)
        ]
        keys = tuple(sorted(event_rows[0]))
        per_row = insert(events).compile(dialect=dialect, column_keys=list(keys),
                                         for_executemany=True).string
        arrays = fast_writes.shape_of(dialect, "insert", events, keys).sql
        _measure(conn, figures, "insert", args, per_row, arrays, event_rows)
        columns = [k for k in sorted(sent_rows[0]) if k != fast_writes.ID_KEY]
        per_row = (update(messages).where(messages.c.id == bindparam(fast_writes.ID_KEY))
                   .values({k: bindparam(k) for k in columns})
                   .compile(dialect=dialect, column_keys=[*columns, fast_writes.ID_KEY],
                            for_executemany=True).string)
        arrays = fast_writes.shape_of(dialect, "update", messages,
                                      tuple(sorted(sent_rows[0]))).sql
        _measure(conn, figures, "update", args, per_row, arrays, sent_rows)
    return figures


def _seed_messages(conn: psycopg.Connection[Any], count: int) -> list[int]:
    """A contact and ``count`` queued outbox rows (no conversation) to update."""
    contact = conn.execute(
        "INSERT INTO contacts (address, kind, created_at, updated_at) "
        "VALUES ('bench@example.com', 'email', now(), now()) RETURNING id").fetchone()
    assert contact is not None
    rows = conn.execute(
        "INSERT INTO messages (contact_id, direction, author, body, status, kind, attempts, "
        "proactive, created_at) SELECT %s, 'outbound', 'agent', 'hi', 'queued', 'message', "
        "0, 0, now() FROM generate_series(1, %s) RETURNING id", (contact[0], count)).fetchall()
    conn.commit()
    return [r[0] for r in rows]


def _measure(conn: psycopg.Connection[Any], figures: dict[str, Any], kind: str,
             args: argparse.Namespace, per_row: str, arrays: str,
             rows: list[dict[str, Any]]) -> None:
    """Alternate the two ways round by round; keep the median of each part."""
    cursor = conn.cursor()
    names = list(rows[0])
    columns = {name: [row[name] for row in rows] for name in names}

    def many() -> None:
        cursor.executemany(per_row, rows)

    def one() -> None:
        cursor.execute(arrays, columns)

    ways: dict[str, Callable[[], None]] = {"executemany": many, "arrays": one}
    found: dict[str, list[tuple[float, float, float]]] = {way: [] for way in ways}
    for _ in range(args.rounds):
        for way, write in ways.items():
            found[way].append(_round(conn, write, args.batches, len(rows)))
    for way, results in found.items():
        for index, part in enumerate(("wall", "client", "server")):
            figures[f"{kind}_{way}_{part}_us"] = round(
                statistics.median(r[index] for r in results), 2)


def _round(conn: psycopg.Connection[Any], write: Callable[[], None], batches: int,
           rows: int) -> tuple[float, float, float]:
    """Microseconds per row: wall, client CPU, server CPU (each batch committed)."""
    backend = conn.info.backend_pid
    wall, client, server = time.perf_counter(), time.process_time(), cpu_seconds(backend)
    for _ in range(batches):
        write()
        conn.commit()
    scale = 1e6 / (batches * rows)
    return ((time.perf_counter() - wall) * scale, (time.process_time() - client) * scale,
            (cpu_seconds(backend) - server) * scale)


if __name__ == "__main__":
    raise SystemExit(main())
