"""Cold CLI latency on a large store, beside the import floor and the ``sqlite3`` CLI.

Each figure is the median wall time of ``--runs`` fresh processes:
``relay list --limit 50 --json``, ``relay status --json`` and ``relay show ID --json``
on a store of ``--small`` and of ``--large`` conversations (bulk-cloned, see
``bulk.py``; SQLite, never ANALYZEd, as relay leaves it), then the references
measured in the same run: the import floor
(``python -c "import typer, sqlalchemy.orm, rich.table"``) and the ``sqlite3`` CLI
answering the same ``show`` and ``list`` reads on the same file.

relay's own bytecode is compiled first (``compileall``), as ``pip install`` does
for an installed package and the first run does for an editable one: the floor's
packages come with theirs, and an environment with ``PYTHONDONTWRITEBYTECODE=1``
(this machine's) would otherwise have every timed command compile relay's
modules from source, about 50 ms of each. The floor is also timed with the
cyclic collector paused (``import_floor_gc_paused_s``), as the ``relay`` command
pauses it while it loads (``relay/cli/__init__.py``): the fair yardstick for
relay's own import work.

    python bench/cli_latency.py --large 1000000
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import bulk
from benchlib import emit, machine, throwaway_store

FLOOR = "import typer, sqlalchemy.orm, rich.table"
FLOOR_GC_PAUSED = f"import gc; gc.disable(); {FLOOR}; gc.freeze(); gc.enable()"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures: dict[str, Any] = {"small": args.small, "large": args.large}
    with throwaway_store(None) as small, throwaway_store(None) as large:
        figures["small_seed_s"] = seed(small, args.small)
        figures["large_seed_s"] = seed(large, args.large)
        compile_relay()
        # Interleaved, run by run, so a busy moment hits every figure alike.
        commands = {"import_floor_s": [sys.executable, "-c", FLOOR],
                    "import_floor_gc_paused_s": [sys.executable, "-c", FLOOR_GC_PAUSED]}
        for label, bench in (("small", small), ("large", large)):
            commands.update({f"{k}_{label}": v for k, v in commands_for(bench).items()})
        times: dict[str, list[float]] = {k: [] for k in commands}
        for _ in range(args.runs):
            for key, command in commands.items():
                times[key].append(timed(command))
        figures.update({k: round(statistics.median(v), 4) for k, v in times.items()})
    figures["machine"] = machine()
    for name in ("list", "status", "show"):
        figures[f"cli_{name}_s"] = figures[f"cli_{name}_s_large"]
        figures[f"cli_{name}_large_vs_small"] = round(
            figures[f"cli_{name}_s_large"] / figures[f"cli_{name}_s_small"], 2)
    table = [("import floor (plain / collector paused)",
              f"{figures['import_floor_s']:.3f} / {figures['import_floor_gc_paused_s']:.3f} s")]
    for name in ("list", "status", "show"):
        table.append((f"relay {name} (small / large / ratio)",
                      f"{figures[f'cli_{name}_s_small']:.3f} / {figures[f'cli_{name}_s_large']:.3f}"
                      f" s / {figures[f'cli_{name}_large_vs_small']:.2f}x"))
    table.append(("sqlite3 CLI show / list (large)",
                  f"{figures['sqlite3_show_s_large']:.3f} / "
                  f"{figures['sqlite3_list_s_large']:.3f} s"))
    emit(figures, args.json, table)
    return 0


def seed(bench: Any, size: int) -> float:
    started = time.monotonic()
    relay = bench.relay()
    template = bulk.make_template(relay)
    waiting = max(1, size // 10)
    bulk.clone(relay, template, size - waiting, tag="c", state="COMPLETED")
    from datetime import UTC, datetime, timedelta

    bulk.clone(relay, template, waiting, tag="w",
               heartbeat_at=datetime.now(UTC) + timedelta(days=1), heartbeat_step_ms=10)
    relay.store.dispose()
    return round(time.monotonic() - started, 1)


def compile_relay() -> None:
    """Write relay's ``.pyc`` files, which the timed processes then load."""
    import relay

    package = Path(relay.__file__).parent
    if not compileall.compile_dir(str(package), quiet=1):
        raise SystemExit(f"could not compile {package}")


def timed(command: list[str]) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAY_")}
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{command} failed: {done.stderr.decode()[-500:]}")
    return elapsed


def commands_for(bench: Any) -> dict[str, list[str]]:
    relay_cmd = [sys.executable, "-m", "relay", "--database", bench.url]
    target = "w0000123"  # a live one
    found = {
        "cli_list_s": [*relay_cmd, "list", "--limit", "50", "--json"],
        "cli_status_s": [*relay_cmd, "status", "--json"],
        "cli_show_s": [*relay_cmd, "show", target, "--json"],
    }
    sqlite3_cli = shutil.which("sqlite3")
    if sqlite3_cli:
        path = bench.url.split(":///", 1)[1]
        found["sqlite3_show_s"] = [sqlite3_cli, "-readonly", path,
            f"SELECT * FROM instances WHERE id = '{target}'; "
            f"SELECT * FROM todos WHERE instance_id = '{target}'"]
        found["sqlite3_list_s"] = [sqlite3_cli, "-readonly", path,
            "SELECT i.*, c.address FROM instances i JOIN contacts c ON c.id = i.contact_id "
            "ORDER BY i.seq DESC LIMIT 50"]
    return found


if __name__ == "__main__":
    os.environ.pop("RELAY_CONFIG", None)
    sys.exit(main())
