"""Heartbeat lateness: how long after its due time a follow-up reaches the channel.

A real daemon (``relay daemon`` as a subprocess, its default 1 s pulse, the
scripted agent and the console channel) works a store where ``--count``
heartbeats fall due spread over ``--spread`` seconds. For each, lateness is
the follow-up's ``sent_at`` minus the heartbeat's due time; the heartbeat's
own firing (its ``heartbeat_fires`` transition) is reported too.

    python bench/heartbeat_lateness.py                      # SQLite, 1,000 heartbeats
    python bench/heartbeat_lateness.py --database postgresql://postgres@127.0.0.1:5432/postgres

Target (issue 4): p99 lateness <= 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import bulk
from benchlib import Bench, ReadOnly, machine, percentile, throwaway_store
from sqlalchemy import bindparam, func, select, update

from relay.store.models import EventRow, Instance, Message
from relay.testing import wait_until as poll


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", help="PostgreSQL server URL (default: a temporary SQLite)")
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--stored", type=int, default=0,
                        help="extra ended conversations in the store (its size)")
    parser.add_argument("--spread", type=float, default=3.0, help="seconds the due times span")
    parser.add_argument("--lead", type=float, default=2.0, help="seconds before the first is due")
    parser.add_argument("--pulse", default="1s", help="the daemon's pulse interval")
    parser.add_argument("--batch", type=int, help="daemon.batch (default: relay's default)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    with throwaway_store(args.database) as bench:
        figures = run(bench, args)
    figures["machine"] = machine()
    report(figures)
    if args.json:
        print(json.dumps(figures, sort_keys=True))
    return 0


def run(bench: Bench, args: argparse.Namespace) -> dict:
    relay = bench.relay()
    started = time.monotonic()
    template = bulk.make_template(relay)
    if args.stored:
        bulk.clone(relay, template, args.stored, tag="c", state="COMPLETED")
    bulk.clone(relay, template, args.count, tag="w",
               heartbeat_at=datetime.now(UTC) + timedelta(days=1))
    if relay.store.dialect == "postgresql":
        bulk.analyze(relay)
    with relay.store.engine.connect() as conn:
        ids = list(conn.execute(select(Instance.id).where(
            Instance.id.like("w%"), func.length(Instance.id) == 8)).scalars())
    seeded = time.monotonic() - started
    reader = ReadOnly(bench.url)
    first_id = reader.scalar("SELECT max(id) FROM messages") or 0

    settings: dict[str, object] = {"daemon.pulse": args.pulse}
    if args.batch:
        settings["daemon.batch"] = args.batch
    config = bench.write_config(**settings)
    log_file = bench.folder / "daemon.log"
    daemon = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "relay",
            "--config",
            str(config),
            "daemon",
            "--log-format",
            "json",
            "--log-file",
            str(log_file),
        ],
        cwd=bench.folder,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        poll(lambda: _registered(reader) or daemon.poll() is not None, timeout=30)
        if daemon.poll() is not None:
            error = daemon.stderr.read().decode() if daemon.stderr else ""
            raise SystemExit(f"the daemon exited at once: {error.strip()}")
        due = _schedule(relay, ids, args.lead, args.spread)
        poll(lambda: _delivered(reader, first_id) >= len(ids), timeout=120 + args.spread,
             every=0.2)
    finally:
        daemon.send_signal(signal.SIGTERM)
        code = daemon.wait(timeout=60)
    reader.close()
    sent, fired = _times(relay, first_id)
    relay.store.dispose()
    late = [(sent[i] - due[i]).total_seconds() for i in ids]
    fire_late = [(fired[i] - due[i]).total_seconds() for i in ids]
    log = log_file.read_text().splitlines()
    return {
        "database": relay.store.dialect,
        "count": len(ids),
        "stored": args.stored,
        "spread_seconds": args.spread,
        "pulse": args.pulse,
        "batch": args.batch or "default",
        "seed_seconds": round(seeded, 1),
        "delivery_lateness": _summary(late),
        "fire_lateness": _summary(fire_late),
        "daemon_exit_code": code,
        "log_lines": len(log),
        "skipped_pulses": sum("maximum number of running instances" in line for line in log),
        "errors_logged": sum(json.loads(line).get("level") == "error" for line in log),
    }


def _registered(reader: ReadOnly) -> bool:
    """Read-only: the bench's poller never takes the write lock from the daemon."""
    return reader.scalar("SELECT count(*) FROM daemons WHERE stopped_at IS NULL") > 0


def _schedule(relay, ids: list[str], lead: float, spread: float) -> dict[str, datetime]:
    """Make the heartbeats fall due from ``lead`` seconds from now, over ``spread`` seconds."""
    base = datetime.now(UTC) + timedelta(seconds=lead)
    step = spread / max(1, len(ids) - 1)
    due = {iid: base + timedelta(seconds=index * step) for index, iid in enumerate(ids)}
    with relay.store.transaction() as session:
        session.connection().execute(
            update(Instance.__table__)
            .where(Instance.__table__.c.id == bindparam("iid"))
            .values(next_heartbeat_at=bindparam("due")),
            [{"iid": iid, "due": when} for iid, when in due.items()],
        )
    return due


def _delivered(reader: ReadOnly, first_id: int) -> int:
    return reader.scalar(
        "SELECT count(*) FROM messages WHERE id > ? AND status = 'sent'", first_id
    ) or 0


def _times(relay, first_id: int) -> tuple[dict[str, datetime], dict[str, datetime]]:
    with relay.store.transaction() as session:
        sent = dict(
            session.execute(
                select(Message.instance_id, Message.sent_at).where(Message.id > first_id)
            ).all()
        )
        fired = dict(
            session.execute(
                select(EventRow.instance_id, func.max(EventRow.created_at))
                .where(EventRow.event == "heartbeat_fires")
                .group_by(EventRow.instance_id)
            ).all()
        )
    return sent, fired


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(percentile(values, 0.50), 3),
        "p90": round(percentile(values, 0.90), 3),
        "p99": round(percentile(values, 0.99), 3),
        "max": round(max(values), 3),
        "min": round(min(values), 3),
    }


def report(figures: dict) -> None:
    d, f = figures["delivery_lateness"], figures["fire_lateness"]
    print(
        f"heartbeat lateness on {figures['database']}: {figures['count']} heartbeats due over "
        f"{figures['spread_seconds']}s, daemon pulse {figures['pulse']}"
    )
    print(
        f"  due -> follow-up sent:  p50 {d['p50']:.3f}s  p90 {d['p90']:.3f}s  "
        f"p99 {d['p99']:.3f}s  max {d['max']:.3f}s"
    )
    print(
        f"  due -> heartbeat fired: p50 {f['p50']:.3f}s  p90 {f['p90']:.3f}s  "
        f"p99 {f['p99']:.3f}s  max {f['max']:.3f}s"
    )
    print(f"  target p99 <= 1s: {'met' if d['p99'] <= 1.0 else 'MISSED'}")
    print(
        f"  daemon exit code {figures['daemon_exit_code']}, {figures['errors_logged']} errors "
        f"and {figures['skipped_pulses']} skipped pulses logged; seeding took "
        f"{figures['seed_seconds']}s"
    )
    print(f"  {figures['machine']}")


if __name__ == "__main__":
    os.environ.pop("RELAY_CONFIG", None)
    sys.exit(main())
