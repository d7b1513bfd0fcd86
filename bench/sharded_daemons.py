"""Past one database, simulated: K PostgreSQL databases on the one server, one
``relay daemon`` each, against one database with one daemon, in the same run.

Each configuration gets the same total of follow-ups due at once (``--due``),
split evenly over its databases, as contacts split by a hash of their id would
be (docs/scaling.md): every database is a complete relay store of its own
(bulk-cloned conversations, ``bulk.py``), its daemon claims only from it. The
heartbeats of every database are made due in one moment once every daemon has
pulsed; the rate is the total over the span from the first firing anywhere to
the last follow-up sent anywhere (the daemons' own time stamps).

Printed per configuration: follow-ups/s, its ratio to one database, the
daemons' CPU per follow-up, the PostgreSQL server's, and the machine's busy
cores over the span: on a machine of two cores, K daemons and the server
share two cores, so the ratio is bounded by what the cores allow (the
``ceiling``: the machine's cores over the CPU a follow-up took, daemon and
server together).

    python bench/sharded_daemons.py --database postgresql://postgres@127.0.0.1:5432/postgres \\
        [--due 6000] [--shards 1,2,3] [--rounds 2] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import bulk
from benchlib import (
    ReadOnly,
    cpu_seconds,
    emit,
    machine,
    machine_cpu,
    median,
    start_daemon,
    stop,
    throwaway_store,
    wait_for,
)
from sqlalchemy import update

from relay.store.tables import instances


def seed(bench: Any, due: int) -> None:
    relay = bench.relay()
    template = bulk.make_template(relay)
    bulk.clone(relay, template, due, tag="w", heartbeat_at=datetime.now(UTC) + timedelta(days=1))
    bulk.analyze(relay)
    relay.store.dispose()


def one_configuration(url: str, shards: int, due: int) -> dict[str, Any]:
    each = due // shards
    with contextlib.ExitStack() as stack:
        benches = [stack.enter_context(throwaway_store(url)) for _ in range(shards)]
        for bench in benches:
            seed(bench, each)
        readers = [ReadOnly(bench.url) for bench in benches]
        stack.callback(lambda: [reader.close() for reader in readers])
        firsts = [reader.scalar("SELECT max(id) FROM messages") for reader in readers]
        daemons = [start_daemon(bench, "d0") for bench in benches]
        try:
            started = _release(benches, readers, daemons)
            cpu_before = machine_cpu()
            daemons_before = sum(cpu_seconds(d.pid) for d in daemons)
            began = time.monotonic()

            def sent() -> int:
                return sum(
                    reader.scalar(
                        "SELECT count(*) FROM messages WHERE id > %s AND status = 'sent'", first
                    )
                    or 0
                    for reader, first in zip(readers, firsts, strict=True)
                )

            wait_for(lambda: sent() >= each * shards, timeout=900, every=0.25,
                     alive=lambda: all(d.poll() is None for d in daemons))  # fmt: skip
            wall = time.monotonic() - began
            daemon_cpu = sum(cpu_seconds(d.pid) for d in daemons) - daemons_before
            cpu_after = machine_cpu()
        finally:
            for daemon in daemons:
                stop(daemon)
        span = _span(readers, firsts, started)
    total = each * shards
    busy = (cpu_after["machine"] - cpu_before["machine"]) / wall
    server_cpu = cpu_after["server"] - cpu_before["server"]
    rate = total / span
    return {
        "shards": shards,
        "due": total,
        "per_second": round(rate, 1),
        "daemon_cpu_ms": round(daemon_cpu / total * 1000, 3),
        "server_cpu_ms": round(server_cpu / total * 1000, 3),
        "busy_cores": round(busy, 2),
        # What every core of the machine allows at this run's CPU per follow-up
        # (daemons + server): the bound on a machine nobody else uses.
        "ceiling_per_second": round(
            (os.cpu_count() or 1) * 1000 * total / max(daemon_cpu + server_cpu, 1e-6) / 1000, 1
        ),
    }


def _release(benches: list[Any], readers: list[ReadOnly], daemons: list[Any]) -> datetime:
    """Once every daemon has pulsed, every database's heartbeats due in one moment."""
    wait_for(
        lambda: all(
            (r.scalar("SELECT count(*) FROM daemons WHERE last_pulse_at IS NOT NULL") or 0) >= 1
            for r in readers
        ),
        timeout=90,
        every=0.1,
        alive=lambda: all(d.poll() is None for d in daemons),
    )
    due_at = datetime.now(UTC) - timedelta(minutes=1)
    engines = [bench.relay().store.engine for bench in benches]
    for engine in engines:
        with engine.begin() as conn:
            conn.execute(
                update(instances).where(instances.c.id.like("w%")).values(next_heartbeat_at=due_at)
            )
    for engine in engines:
        engine.dispose()
    return due_at


def _span(readers: list[ReadOnly], firsts: list[int], due_at: datetime) -> float:
    """From the first firing in any database to the last send in any."""
    fired = min(
        r.scalar("SELECT min(created_at) FROM events WHERE event = 'heartbeat_fires' "
                 "AND created_at > %s", due_at)
        for r in readers
    )  # fmt: skip
    last = max(
        r.scalar("SELECT max(sent_at) FROM messages WHERE id > %s", first)
        for r, first in zip(readers, firsts, strict=True)
    )
    return float((last - fired).total_seconds())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", required=True, help="the PostgreSQL server's URL")
    parser.add_argument("--due", type=int, default=6000, help="follow-ups due, in total")
    parser.add_argument("--shards", default="1,2,3", help="database counts to compare")
    parser.add_argument("--rounds", type=int, default=1, help="each configuration, alternated")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    counts = [int(n) for n in args.shards.split(",")]
    before = machine()
    runs: dict[int, list[dict[str, Any]]] = {n: [] for n in counts}
    for number in range(args.rounds):
        for shards in counts if number % 2 == 0 else counts[::-1]:
            result = one_configuration(args.database, shards, args.due)
            runs[shards].append(result)
            print(f"round {number + 1}, {shards} database(s): {result}", flush=True)
    base = median([r["per_second"] for r in runs[counts[0]]])
    table = []
    figures: dict[str, Any] = {"machine_before": before, "machine_after": machine()}
    for shards, results in runs.items():
        rate = median([r["per_second"] for r in results])
        figures[f"shards_{shards}"] = {
            "per_second": rate,
            "ratio_to_first": round(rate / base, 2),
            "daemon_cpu_ms": median([r["daemon_cpu_ms"] for r in results]),
            "server_cpu_ms": median([r["server_cpu_ms"] for r in results]),
            "busy_cores": median([r["busy_cores"] for r in results]),
            "ceiling_per_second": median([r["ceiling_per_second"] for r in results]),
        }
        f = figures[f"shards_{shards}"]
        table.append((
            f"{shards} database(s), one daemon each",
            f"{rate:,.0f}/s ({f['ratio_to_first']:.2f}x); CPU ms per follow-up daemon "
            f"{f['daemon_cpu_ms']:.3f} + server {f['server_cpu_ms']:.3f}; cores busy "
            f"{f['busy_cores']:.2f}; ceiling {f['ceiling_per_second']:,.0f}/s",
        ))  # fmt: skip
    table += [("machine before", before), ("machine after", figures["machine_after"])]
    emit(figures, args.json, table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
