"""What one of the daemon's log lines costs: written as a record of its own, and
as one line of a transaction's lines written together at its commit
(``relay/store/commit_log.py``), in the text and the JSON format.

The logging is the daemon's own (``configure_logging`` as ``relay daemon`` sets
it up: a log file, secrets masked, lean records), into a temporary file; the
transactions are empty ones on an in-memory SQLite database, so the figure is
the lines' cost alone. Reported in µs per line, the best of the rounds.

    python bench/log_lines.py
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchlib import emit, machine
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from relay.runner.logs import configure_logging, held
from relay.store import commit_log

#: A transition's line, as ``relay.engine.conversation.transitions`` writes it.
LINE = ("instance %s: %s -> %s (%s by %s)", "w0000001", "WAITING_FOR_REPLY",
        "HEARTBEAT_SCHEDULED", "heartbeat_fires", "heartbeat")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=500, help="lines per transaction")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures: dict[str, Any] = {"lines": args.lines, "machine": machine()}
    with tempfile.TemporaryDirectory(prefix="relay-bench-") as folder:
        for fmt in ("text", "json"):
            figures.update(run(fmt, Path(folder) / f"{fmt}.log", args))
    table = [(f"{fmt}, {way} (us per line)", f"{figures[f'{fmt}_{way}_us']:.2f}")
             for fmt in ("text", "json") for way in ("record", "together")]
    emit(figures, args.json, table)
    return 0


def run(fmt: str, path: Path, args: argparse.Namespace) -> dict[str, float]:
    configure_logging(fmt, False, path, owns_process=True)
    relay = logging.getLogger("relay")
    relay.propagate = False  # as in the daemon: relay's handler is the only one
    log = logging.getLogger("relay.state")
    engine = create_engine("sqlite://")
    extra = {"instance_id": LINE[1]}

    def record() -> None:
        for _ in range(args.lines):
            log.info(*LINE, extra=extra)

    def together() -> None:
        with Session(engine) as session, session.begin():
            for _ in range(args.lines):
                commit_log.info(session, log, *LINE, instance_id=LINE[1])

    with held():
        figures = {f"{fmt}_record_us": _best(record, args),
                   f"{fmt}_together_us": _best(together, args)}
    relay.handlers[0].close()
    return figures


def _best(work: Callable[[], None], args: argparse.Namespace) -> float:
    times = []
    for _ in range(args.rounds):
        started = time.perf_counter()
        for _ in range(20):
            work()
        times.append(time.perf_counter() - started)
    return round(min(times) / 20 / args.lines * 1e6, 3)


if __name__ == "__main__":
    raise SystemExit(main())
