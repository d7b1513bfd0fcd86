"""CPU and wall time of ``relay import`` of a CSV of ``--rows`` rows (a cold process).

Writes a CSV (phone, name, order, timezone) of distinct contacts, then runs
``python -m relay import FILE --campaign bench -o ... -t ... --json`` on a fresh
SQLite store, ``--runs`` times (a new store each), and reports the medians of the
child's CPU time (user + system, from ``getrusage``) and wall time, beside the
import floor. ``--profile`` runs one more import under cProfile and prints the top.

    python bench/import_rows.py --rows 10000 [--runs 3] [--profile]
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import emit, machine, throwaway_store
from cli_latency import FLOOR, compile_relay


def write_csv(path: Path, rows: int) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["phone", "name", "order", "timezone"])
        for n in range(rows):
            writer.writerow([f"+1 555 {n // 10000:03d} {n % 10000:04d}", f"Name {n}", 1000 + n,
                             "Europe/Madrid" if n % 2 else ""])  # fmt: skip


def timed(command: list[str]) -> tuple[float, float]:
    """(CPU seconds of the child, wall seconds)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAY_")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{command} failed: {done.stderr.decode()[-800:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def import_command(url: str, path: Path, *, profile: Path | None = None) -> list[str]:
    runner = ["-m", "cProfile", "-o", str(profile), "-m", "relay"] if profile else ["-m", "relay"]
    return [sys.executable, *runner, "--database", url, "import", str(path), "--campaign",
            "bench", "-o", "Confirm the delivery of order {order} to {name}",
            "-t", "Which day suits {name}?", "--json"]  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures: dict[str, Any] = {"rows": args.rows}
    with tempfile.TemporaryDirectory(prefix="relay-import-") as raw:
        path = Path(raw) / "contacts.csv"
        write_csv(path, args.rows)
        compile_relay()
        cpu, wall, floor = [], [], []
        for _ in range(args.runs):
            with throwaway_store(None) as bench:
                c, w = timed(import_command(bench.url, path))
            cpu.append(c)
            wall.append(w)
            floor.append(timed([sys.executable, "-c", FLOOR])[0])
        figures.update(import_cpu_s=round(statistics.median(cpu), 2),
                       import_wall_s=round(statistics.median(wall), 2),
                       floor_cpu_s=round(statistics.median(floor), 2))  # fmt: skip
        if args.profile:
            import pstats

            stats_file = Path(raw) / "import.prof"
            with throwaway_store(None) as bench:
                timed(import_command(bench.url, path, profile=stats_file))
            pstats.Stats(str(stats_file)).sort_stats("cumulative").print_stats(30)
    figures["machine"] = machine()
    emit(figures, args.json, [
        (f"relay import of {args.rows:,} rows: CPU / wall", f"{figures['import_cpu_s']:.2f} / "
         f"{figures['import_wall_s']:.2f} s"),
        ("import floor CPU", f"{figures['floor_cpu_s']:.2f} s"), ("machine", figures["machine"]),
    ])  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
