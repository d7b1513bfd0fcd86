"""What a follow-up asks of the database: statements and rows written, by kind and table.

``--count`` conversations wait for a reply on a fresh store; the clock moves past
their heartbeats and in-process pulses (scripted agent, console channel) run until
every follow-up is delivered, once to warm up and once counted. SQLite: every
statement the driver runs (``sqlite3``'s trace callback, which also sees what
:mod:`relay.store.hotpath.prepared` runs past SQLAlchemy; an ``executemany`` counts once
a row), by its first word and table, and the rows written (``total_changes``).
PostgreSQL: the statements SQLAlchemy sends (``before_cursor_execute``; the
server's own figures are ``bench/pg_statement_times.py``'s).

    python bench/statement_counts.py [--count 500] [--database postgresql://...]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from datetime import timedelta
from typing import Any

from benchlib import seed_waiting, throwaway_store

from relay.runner.pulse import Pulse
from relay.testing import FakeClock, traced_statements

_TABLE = re.compile(r"\b(?:INTO|UPDATE|FROM)\s+\"?(\w+)", re.I)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", help="PostgreSQL server URL (default: a temporary SQLite)")
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with throwaway_store(args.database) as bench:
        clock = FakeClock()
        relay = bench.relay(clock)
        seed_waiting(relay, args.count, heartbeat="1h", max_followups=10)
        pulse = Pulse(relay, owner="bench")
        clock.advance(timedelta(hours=1))
        _work_off(pulse, args.count)  # warm: statements prepared, caches filled
        clock.advance(timedelta(hours=1))
        statements, written = _counted(relay, pulse, args.count)
        dialect = relay.store.dialect
        relay.store.dispose()
    per = args.count
    figures = {
        "database": dialect,
        "follow_ups": per,
        "statements_per_follow_up": round(sum(statements.values()) / per, 3),
        "statements": {k: round(v / per, 3) for k, v in statements.most_common()},
    }
    if dialect == "sqlite":
        figures["rows_written_per_follow_up"] = round(written / per, 3)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"{dialect}: {per} follow-ups; per follow-up "
          f"{figures['statements_per_follow_up']} statements, "
          f"{figures.get('rows_written_per_follow_up', '?')} rows written")
    for key, value in figures["statements"].items():
        print(f"  {value:7.3f}  {key}")
    return 0


def _counted(relay: Any, pulse: Pulse, count_of: int) -> tuple[Counter[str], int]:
    """Work off the due follow-ups, counting statements (and, on SQLite, rows written)."""
    statements: Counter[str] = Counter()

    def count(sql: str, rows: int) -> None:
        word = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else "?"
        table = _TABLE.search(sql)
        statements[f"{word} {table.group(1) if table else ''}".strip()] += rows

    with traced_statements(relay.store, count) as connections:
        _work_off(pulse, count_of)
        written = sum(c.total_changes - before for c, before in connections)
    return statements, written


def _work_off(pulse: Pulse, count: int) -> None:
    sent = 0
    while sent < count:
        report = pulse.run()
        sent += report.delivery.sent
        if report.idle:
            raise SystemExit(f"stalled: {sent} delivered of {count}")


if __name__ == "__main__":
    sys.exit(main())
