"""Run the whole benchmark suite and print every figure of issue 12 beside its reference.

Each benchmark runs as its own process (``bench/NAME.py --json``); this script
collects their JSON lines, prints one table, and (with ``--json``) one JSON line
carrying at least: followups_per_s_sqlite, reference_sqlite_per_s,
followups_per_s_pg_1, followups_per_s_pg_4, cli_list_s, cli_status_s,
import_floor_s, lateness_p99_s, rss_mb_100k.

    python bench/run.py --quick --json       # under three minutes on the 2-core machine
    python bench/run.py                      # issue 12's sizes: 10,000 due, 1M stored

PostgreSQL figures need a server (``--database``, default
``postgresql://postgres@127.0.0.1:5432/postgres``); the benchmarks create and
drop databases of their own there. ``--no-postgres`` leaves them out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PG = "postgresql://postgres@127.0.0.1:5432/postgres"


def plan(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    due = "2000" if args.quick else "10000"
    large = "100000" if args.quick else "1000000"
    steps = [
        ("sqlite", ["daemon_throughput.py", "--due", due]),
        ("cli", ["cli_latency.py", "--small", "10000", "--large", large,
                 "--runs", "3" if args.quick else "5"]),
        ("lateness", ["heartbeat_lateness.py", "--count", "1000", "--spread", "3"]),
        ("import", ["import_rows.py", "--rows", "10000", "--runs", "1" if args.quick else "3"]),
        ("rss", ["daemon_throughput.py", "--due", "100000", "--no-reference",
                 "--max-seconds", "10" if args.quick else "60"]),
    ]
    if not args.no_postgres:
        steps += [
            ("pg_1", ["daemon_throughput.py", "--due", due, "--database", args.database]),
            ("pg_4", ["daemon_throughput.py", "--due", due, "--daemons", "4",
                      "--database", args.database]),
        ]
    return steps


def run_step(script: list[str]) -> dict[str, Any]:
    command = [sys.executable, str(HERE / script[0]), *script[1:], "--json"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=HERE)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(script)} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def collect(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    sqlite, cli = results["sqlite"], results["cli"]
    found: dict[str, Any] = {
        "followups_per_s_sqlite": sqlite["per_second"],
        "reference_sqlite_per_s": sqlite["reference_sqlite_per_s"],
        "sqlite_vs_reference": round(sqlite["per_second"] / sqlite["reference_sqlite_per_s"], 3),
        "reference_full_sqlite_per_s": sqlite["reference_full_sqlite_per_s"],
        "sqlite_vs_full_reference": round(
            sqlite["per_second"] / sqlite["reference_full_sqlite_per_s"], 3),
        "cpu_ms_per_followup_sqlite": sqlite["cpu_ms_per_followup"],
        "burst_lateness_p99_s": sqlite["lateness_p99_s"],
        "lateness_p99_s": results["lateness"]["delivery_lateness"]["p99"],
        "rss_mb_100k": results["rss"]["peak_rss_mb"],
        "import_floor_s": cli["import_floor_s"],
        # ``relay import`` of a 10,000-row CSV in a cold process, start-up included.
        "bulk_start_per_s": round(results["import"]["rows"] / results["import"]["import_wall_s"]),
        "stored_large": cli["large"],
    }
    for key in ("import_floor_gc_paused_s", "cli_list_s", "cli_status_s", "cli_show_s",
                "cli_list_large_vs_small",
                "cli_status_large_vs_small", "cli_show_large_vs_small",
                "sqlite3_show_s_large", "sqlite3_list_s_large"):
        found[key] = cli[key]
    if "pg_1" in results:
        found["followups_per_s_pg_1"] = results["pg_1"]["per_second"]
        found["followups_per_s_pg_4"] = results["pg_4"]["per_second"]
        found["pg_4_vs_1"] = round(found["followups_per_s_pg_4"] / found["followups_per_s_pg_1"], 2)
        found.update(pg_ceiling(results["pg_1"], results["pg_4"]))
    found["machine"] = sqlite["machine"]
    return found


def pg_ceiling(one: dict[str, Any], four: dict[str, Any]) -> dict[str, Any]:
    """The most four daemons could deliver on this machine: every core busy at the
    CPU per follow-up (daemons' and server's) the four measured, and that over one
    daemon's rate. One daemon and its server take turns (each statement waits for
    its answer), so on two cores the ratio cannot pass about 2 whatever relay
    does; read ``pg_4_vs_1`` against ``pg_4_vs_1_ceiling``, not against 2."""
    cores = os.cpu_count() or 1
    per_followup_ms = four["cpu_ms_per_followup"] + four["server_cpu_ms_per_followup"]
    ceiling = cores / per_followup_ms * 1000
    return {
        "pg_4_ceiling_per_s": round(ceiling),
        "pg_4_vs_1_ceiling": round(ceiling / one["per_second"], 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, under 3 minutes")
    parser.add_argument("--database", default=PG, help="PostgreSQL server URL")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    started = time.monotonic()
    results = {}
    for name, script in plan(args):
        step = time.monotonic()
        results[name] = run_step(script)
        print(f"  {name}: {time.monotonic() - step:.0f}s", file=sys.stderr)
    figures = collect(results)
    figures["suite_seconds"] = round(time.monotonic() - started, 1)
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        print(f"{key:<{width}}  {value}")
    if args.json:
        print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
