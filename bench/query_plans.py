"""The query plan of every distinct SELECT a pulse and the read commands run, on a
store of realistic size: a check that each one searches an index.

A store of ``--stored`` completed conversations (a tenth of them in a campaign),
``--due`` waiting ones whose heartbeats are due and ``--waiting`` whose are a
day away; statements are captured
while one pulse runs in-process and while ``relay list``, ``list --state``,
``list --campaign``, ``status``, ``show ID`` and ``show PREFIX``, ``stats`` and ``stats
--campaign`` run through the real CLI (in-process, Typer's runner). Each
distinct statement is then explained with the parameters it ran with
(``EXPLAIN QUERY PLAN`` on SQLite, ``EXPLAIN`` on an analysed PostgreSQL).
A plan that reads a whole big table (``SCAN instances`` / ``Seq Scan on
messages`` ...) is listed at the end.

    python bench/query_plans.py                 # SQLite
    python bench/query_plans.py --database postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import bulk
from benchlib import throwaway_store
from sqlalchemy import event, text
from sqlalchemy.engine import Engine

from relay.runner.pulse import Pulse

BIG = ("instances", "messages", "events", "contacts", "todos")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", help="PostgreSQL server URL (default: a temporary SQLite)")
    parser.add_argument("--stored", type=int, default=200_000, help="completed conversations")
    parser.add_argument("--due", type=int, default=2_000, help="waiting ones, heartbeat due")
    parser.add_argument("--waiting", type=int, default=20_000,
                        help="waiting ones, heartbeat a day away")
    parser.add_argument("--json", action="store_true", help="one JSON line, no plans")
    args = parser.parse_args()
    with throwaway_store(args.database) as bench:
        relay = seed(bench, args)
        captured = capture(bench, relay)
        plans = {statement: explain(relay, statement, params)
                 for statement, params in captured.items()}
        relay.store.dispose()
    scans = [short(s) for s, plan in plans.items() if full_scan(plan)]
    if not args.json:
        for statement, plan in plans.items():
            print(f"-- {short(statement)}\n{plan}\n")
        print(f"{len(plans)} distinct SELECTs; reading a whole big table: {len(scans)}")
        for line in scans:
            print(f"  {line}")
    print(json.dumps({"statements": len(plans), "full_scans": scans}))
    return 0


def seed(bench: Any, args: argparse.Namespace) -> Any:
    relay = bench.relay()
    template = bulk.make_template(relay)
    bulk.clone(relay, template, args.stored, tag="c", state="COMPLETED")
    due = datetime.now(UTC) - timedelta(minutes=1)
    bulk.clone(relay, template, args.due, tag="w", heartbeat_at=due)
    bulk.clone(relay, template, args.waiting, tag="x", heartbeat_at=due + timedelta(days=1))
    with relay.store.engine.begin() as conn:
        conn.execute(text("UPDATE instances SET campaign = 'spring' WHERE id LIKE 'c%0'"))
    if relay.store.dialect == "postgresql":
        bulk.analyze(relay)
    return relay


def capture(bench: Any, relay: Any) -> dict[str, Any]:
    """Every distinct SELECT, with the parameters of its first run."""
    from typer.testing import CliRunner

    from relay.cli.main import app

    captured: dict[str, Any] = {}

    def grab(conn: Any, cursor: Any, statement: str, params: Any, context: Any,
             executemany: bool) -> None:
        if not executemany and statement.lstrip().upper().startswith(("SELECT", "WITH")):
            captured.setdefault(statement, params)

    event.listen(Engine, "before_cursor_execute", grab)
    try:
        Pulse(relay, owner="plans").run()
        config = str(bench.write_config())
        commands = [["list", "--limit", "50"], ["list", "--state", "WAITING_FOR_REPLY"],
                    ["list", "--campaign", "spring", "--limit", "50"], ["status"],
                    ["show", "c0000123"], ["show", "c000012"], ["stats"],
                    ["stats", "--campaign", "spring"]]
        runner = CliRunner()
        for command in commands:
            result = runner.invoke(app, ["--config", config, *command, "--json"])
            # 2: the short prefix is ambiguous (on purpose: the prefix's range is read).
            if result.exit_code not in (0, 2):
                sys.exit(f"relay {' '.join(command)}: exit {result.exit_code}: {result.output}")
    finally:
        event.remove(Engine, "before_cursor_execute", grab)
    return captured


def explain(relay: Any, statement: str, params: Any) -> str:
    raw = relay.store.engine.raw_connection()
    try:
        cursor = raw.cursor()
        if relay.store.dialect == "sqlite":
            cursor.execute(f"EXPLAIN QUERY PLAN {statement}", params)
            return "\n".join(f"{'  ' * (row[1] != 0)}{row[3]}" for row in cursor.fetchall())
        cursor.execute(f"EXPLAIN {statement}", params)
        return "\n".join(row[0] for row in cursor.fetchall())
    finally:
        raw.rollback()
        raw.close()


def full_scan(plan: str) -> bool:
    tables = "|".join(BIG)
    return bool(re.search(rf"(^|\s)SCAN ({tables})\b(?! USING)|Seq Scan on ({tables})\b", plan,
                          re.MULTILINE))


def short(statement: str) -> str:
    return " ".join(statement.split())[:140]


if __name__ == "__main__":
    sys.exit(main())
