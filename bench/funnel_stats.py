"""How long a cold ``relay stats --json`` takes on a large store, beside the import floor.

Seeds ``--small`` and ``--large`` conversations with ``bulk.clone`` (one real
conversation cloned in SQL), then spreads them over the funnel with one UPDATE:
two campaigns, every outcome, a third replied (``reply_seconds`` 0-90 min),
follow-ups 0-2, and one first message in 100 failed for one of three reasons.
Then, interleaved run by run, times fresh processes of ``relay stats --json``
and ``relay stats --campaign c1 --json`` on each store and the import floor
(``python -c "import typer, sqlalchemy.orm, rich.table"``), and reports medians.
``--plans`` prints the query plans of the funnel's statements on the large store.

    python bench/funnel_stats.py --small 10000 --large 1000000 [--runs 5] [--plans]
    python bench/funnel_stats.py --large 200000 --database postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

import bulk
from benchlib import emit, machine, throwaway_store
from cli_latency import FLOOR, compile_relay, timed
from sqlalchemy import text

OUTCOMES = "CASE seq % 8 WHEN 1 THEN 'completed' WHEN 2 THEN 'ended_early' " \
    "WHEN 3 THEN 'opted_out' WHEN 4 THEN 'abandoned' WHEN 5 THEN 'failed' " \
    "WHEN 6 THEN 'needs_human' END"  # fmt: skip


def seed(bench: Any, size: int) -> float:
    started = time.monotonic()
    relay = bench.relay()
    template = bulk.make_template(relay)
    bulk.clone(relay, template, size - 1, tag="f", state="COMPLETED")
    with relay.store.engine.begin() as conn:
        conn.execute(text(
            f"UPDATE instances SET campaign = 'c' || (seq % 2), outcome = {OUTCOMES}, "
            "followups_sent = seq % 3, "
            "first_reply_at = CASE WHEN seq % 3 = 0 THEN first_delivered_at END, "
            "reply_seconds = CASE WHEN seq % 3 = 0 THEN (seq * 7) % 5400 END"))
        conn.execute(text(
            "UPDATE messages SET status = 'failed', sent_at = NULL, last_error = "
            "CASE id % 3 WHEN 0 THEN 'bounced' WHEN 1 THEN 'number not in service' "
            "ELSE 'timeout' END WHERE direction = 'outbound' AND id % 100 = 0"))
        if conn.dialect.name == "postgresql":
            conn.commit()
            conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("VACUUM ANALYZE"))
    relay.store.dispose()
    return round(time.monotonic() - started, 1)


def commands(bench: Any) -> dict[str, list[str]]:
    relay_cmd = [sys.executable, "-m", "relay", "--database", bench.url, "stats"]
    return {"stats_all_s": [*relay_cmd, "--json"],
            "stats_campaign_s": [*relay_cmd, "--campaign", "c1", "--json"]}  # fmt: skip


def in_process(bench: Any, runs: int) -> dict[str, float]:
    """The statements alone (warm process, cold-ish cache): what the CLI adds to the floor."""
    relay = bench.relay()
    found = {}
    for key, campaign in (("query_all_s", None), ("query_campaign_s", "c1")):
        times = []
        for _ in range(runs):
            began = time.perf_counter()
            relay.stats(campaign=campaign)
            times.append(time.perf_counter() - began)
        found[key] = round(statistics.median(times), 4)
    relay.store.dispose()
    return found


def plans(bench: Any) -> None:
    """EXPLAIN (QUERY PLAN) of every statement ``relay stats --campaign c1`` runs."""
    from sqlalchemy import event

    relay = bench.relay()
    seen: list[tuple[str, Any]] = []
    event.listen(relay.store.engine, "before_cursor_execute",
                 lambda c, cur, stmt, params, ctx, many: seen.append((stmt, params)))  # fmt: skip
    relay.stats(campaign="c1")
    pg = relay.store.engine.dialect.name == "postgresql"
    with relay.store.engine.connect() as conn:
        for statement, params in seen:
            if not statement.lstrip().upper().startswith("SELECT"):
                continue
            prefix = "EXPLAIN (ANALYZE, BUFFERS OFF) " if pg else "EXPLAIN QUERY PLAN "
            print("--", " ".join(statement.split())[:160])
            for row in conn.exec_driver_sql(prefix + statement, params).all():
                print("  ", " | ".join(str(v) for v in row))
    relay.store.dispose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--database", default=None, help="PostgreSQL server URL (default SQLite)")
    parser.add_argument("--plans", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures: dict[str, Any] = {"small": args.small, "large": args.large}
    with throwaway_store(args.database) as small, throwaway_store(args.database) as large:
        figures["small_seed_s"] = seed(small, args.small)
        figures["large_seed_s"] = seed(large, args.large)
        compile_relay()
        runs = {"import_floor_s": [sys.executable, "-c", FLOOR]}
        for label, bench in (("small", small), ("large", large)):
            runs.update({f"{k}_{label}": v for k, v in commands(bench).items()})
        times: dict[str, list[float]] = {k: [] for k in runs}
        for _ in range(args.runs):  # interleaved: a busy moment hits every figure alike
            for key, command in runs.items():
                times[key].append(timed(command))
        figures.update({k: round(statistics.median(v), 4) for k, v in times.items()})
        figures.update({f"{k}_large": v for k, v in in_process(large, args.runs).items()})
        if args.plans:
            plans(large)
    floor = figures["import_floor_s"]
    table = [("import floor", f"{floor:.3f} s")]
    for key in ("stats_all_s", "stats_campaign_s"):
        small_s, large_s = figures[f"{key}_small"], figures[f"{key}_large"]
        figures[f"{key}_large_over_floor"] = round(large_s - floor, 4)
        table.append((f"{key[:-2]} small / large / large - floor",
                      f"{small_s:.3f} / {large_s:.3f} / {large_s - floor:+.3f} s"))  # fmt: skip
    queries = f"{figures['query_all_s_large']:.3f} / {figures['query_campaign_s_large']:.3f} s"
    table.append(("statements in-process (all / c1, large)", queries))
    figures["machine"] = machine()
    table.append(("machine", figures["machine"]))
    emit(figures, args.json, table)
    return 0


if __name__ == "__main__":
    os.environ.pop("RELAY_CONFIG", None)
    sys.exit(main())
