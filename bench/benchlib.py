"""Shared set-up for the benchmarks under ``bench/``: a throwaway store, seeded instances.

Not a test helper and not part of relay: the benchmarks import it by path
(``python bench/pulse_throughput.py`` puts ``bench/`` on ``sys.path``).
"""

from __future__ import annotations

import contextlib
import math
import os
import platform
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from relay.api import Relay
from relay.config import load_config
from relay.runner.pulse import Pulse
from relay.store.database import Store, make_engine
from relay.store.migrate import upgrade_url
from relay.testing import FakeClock


@dataclass
class Bench:
    """A migrated database of its own, a working folder, and the URL to reach it."""

    url: str
    folder: Path

    @property
    def console_file(self) -> Path:
        return self.folder / "console.jsonl"

    def overrides(self, **extra: Any) -> dict[str, Any]:
        return {
            "database.url": self.url,
            "channels.console.file": str(self.console_file),
            "channels.console.echo": False,
            **extra,
        }

    def relay(self, clock: Any = None, **extra: Any) -> Relay:
        config = load_config(overrides=self.overrides(**extra))
        return Relay(Store(make_engine(self.url)), config, clock)

    def write_config(self, **extra: Any) -> Path:
        """A relay.toml for a daemon subprocess, equivalent to :meth:`overrides`."""
        path = self.folder / "relay.toml"
        lines = [
            "[database]",
            f'url = "{self.url}"',
            "[channels.console]",
            f'file = "{self.console_file}"',
            "echo = false",
        ]
        sections: dict[str, list[str]] = {}
        for key, value in extra.items():
            section, name = key.rsplit(".", 1)
            sections.setdefault(section, []).append(f"{name} = {_toml(value)}")
        for section, entries in sections.items():
            lines += [f"[{section}]", *entries]
        path.write_text("\n".join(lines) + "\n")
        return path


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return f'"{value}"'


@contextmanager
def throwaway_store(url: str | None) -> Iterator[Bench]:
    """A fresh migrated database: a temporary SQLite file, or (for a PostgreSQL
    URL) a new database on that server, dropped afterwards."""
    # BENCH_KEEP=1 keeps the folder (daemon logs, the SQLite file) for a look afterwards.
    keep = bool(os.environ.get("BENCH_KEEP"))
    with contextlib.ExitStack() as cleanup:
        if keep:
            raw = tempfile.mkdtemp(prefix="relay-bench-")
            print(f"keeping {raw}", file=sys.stderr)
        else:
            raw = cleanup.enter_context(tempfile.TemporaryDirectory(prefix="relay-bench-"))
        folder = Path(raw)
        if not url or url.startswith("sqlite"):
            target = f"sqlite:///{folder / 'relay.db'}"
            upgrade_url(target)
            yield Bench(target, folder)
            return
        import psycopg
        from sqlalchemy.engine import make_url

        server = make_url(url).set(drivername="postgresql")
        admin = server.render_as_string(hide_password=False)
        name = f"relay_bench_{secrets.token_hex(4)}"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        target = server.set(database=name).render_as_string(hide_password=False)
        try:
            upgrade_url(target)
            yield Bench(target, folder)
        finally:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def seed_waiting(
    relay: Relay, count: int, *, heartbeat: str = "1h", max_followups: int = 50
) -> list[str]:
    """``count`` instances through the real API and a real first turn: each ends in
    WAITING_FOR_REPLY with its first message delivered and a heartbeat pending."""
    ids = [
        relay.start(
            f"+1555{index:07d}",
            "Confirm the delivery date",
            ["Which day suits you?"],
            heartbeat=heartbeat,
            max_followups=max_followups,
            defer=True,
        ).id
        for index in range(count)
    ]
    pulse = Pulse(relay, owner="bench-seed")
    while not pulse.run().idle:
        pass
    analyze(relay)
    return ids


def analyze(relay: Relay) -> None:
    """Give the query planner statistics, as a database in service has (PostgreSQL's
    autovacuum would collect them soon; without them a fresh database is scanned)."""
    from sqlalchemy import text

    with relay.store.engine.connect() as conn:
        conn.execute(text("ANALYZE"))
        conn.commit()


def fake_clock_at_now() -> FakeClock:
    return FakeClock(datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1))


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile (p99 of 1,000 values is the 990th smallest)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def machine() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"{platform.python_implementation()} {platform.python_version()} on "
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average {load:.2f}"
    )


# -- real processes, read-only polling ------------------------------------------------------


class ReadOnly:
    """A plain driver connection that only ever reads: on SQLite opened ``mode=ro``
    (a WAL reader, never the write lock), on PostgreSQL autocommit SELECTs."""

    def __init__(self, url: str) -> None:
        if url.startswith("sqlite"):
            import sqlite3

            path = url.split(":///", 1)[1]
            self.conn: Any = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
            self.mark = "?"
        else:
            import psycopg
            from sqlalchemy.engine import make_url

            plain = make_url(url).set(drivername="postgresql").render_as_string(False)
            self.conn = psycopg.connect(plain, autocommit=True)
            self.mark = "%s"

    def scalar(self, sql: str, *params: Any) -> Any:
        row = self.conn.execute(sql.replace("?", self.mark), params).fetchone()
        return row[0] if row else None

    def rows(self, sql: str, *params: Any) -> list[Any]:
        return list(self.conn.execute(sql.replace("?", self.mark), params).fetchall())

    def close(self) -> None:
        self.conn.close()


def start_daemon(bench: Bench, name: str = "d0", **settings: Any) -> Any:
    """``relay daemon`` as a subprocess with a folder (and PID file) of its own."""
    import subprocess
    import sys

    folder = bench.folder / name
    folder.mkdir(exist_ok=True)
    config = Bench(bench.url, folder).write_config(**settings)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAY_")}
    # BENCH_PROFILE=DIR runs each daemon under cProfile, its stats in DIR/NAME.prof.
    profile_dir = os.environ.get("BENCH_PROFILE")
    profile = ["-m", "cProfile", "-o", f"{profile_dir}/{name}.prof"] if profile_dir else []
    process = subprocess.Popen(
        [sys.executable, *profile, "-m", "relay", "--config", str(config), "daemon",
         "--log-format", "json", "--log-file", str(folder / "daemon.log")],
        cwd=folder, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, env=env,
    )
    # BENCH_PYSPY=DIR samples every thread of each daemon with py-spy (from
    # PyPI), its folded stacks written to DIR/NAME.txt when the daemon exits.
    spy_dir = os.environ.get("BENCH_PYSPY")
    if spy_dir:
        subprocess.Popen(
            [str(Path(sys.executable).with_name("py-spy")), "record", "--format", "raw",
             "--nonblocking", "-r", "1000", "-p", str(process.pid),
             "-o", f"{spy_dir}/{name}.txt"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
    return process


def stop(process: Any, timeout: float = 60) -> int:
    """SIGTERM, then wait (a kill after ``timeout``). The process's CPU time (user +
    system, from its rusage) is left in ``process.cpu_seconds``: on a shared, noisy
    machine CPU per unit of work is steadier than wall-clock rates."""
    import signal

    if process.returncode is not None:  # already reaped (by poll()): its rusage is gone
        process.cpu_seconds = getattr(process, "cpu_seconds", 0.0)
        return int(process.returncode)
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            process.returncode = os.waitstatus_to_exitcode(status)
            process.cpu_seconds = usage.ru_utime + usage.ru_stime
            return int(process.returncode)
        time.sleep(0.05)
    process.kill()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    process.cpu_seconds = usage.ru_utime + usage.ru_stime
    return int(process.returncode)


def wait_for(predicate: Any, timeout: float, every: float = 0.2, alive: Any = None) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if alive is not None and not alive():
            raise SystemExit("a daemon exited early")
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout}s")
        time.sleep(every)


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident set (VmHWM), in MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU the (running) process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_cpu() -> dict[str, float]:
    """CPU seconds used so far by the whole machine (every core, from /proc/stat)
    and by the PostgreSQL server's processes: taken before and after a run, they
    say whether the cores were the limit and what the server spent per unit of
    work (a daemon's own rusage leaves the server out)."""
    tick = os.sysconf("SC_CLK_TCK")
    # user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
    ticks = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    busy = sum(ticks) - ticks[3] - ticks[4]
    server = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() in ("postgres", "postmaster"):
                server += cpu_seconds(int(entry.name))
        except OSError:  # gone meanwhile
            continue
    return {"machine": busy / tick, "server": server}


def emit(figures: dict[str, Any], as_json: bool, table: list[tuple[str, str]]) -> None:
    """Print the human table, then (with ``--json``) one JSON line for tools."""
    import json

    width = max(len(k) for k, _ in table) if table else 0
    for key, value in table:
        print(f"  {key:<{width}}  {value}")
    if as_json:
        print(json.dumps(figures, sort_keys=True))
