"""Pulse throughput: follow-ups per second from one pulse loop (one daemon's worth of work).

``--count`` instances wait for a reply with their heartbeats already due (the
FakeClock is moved past them); ``Pulse.run()`` is called until every heartbeat
has fired and every follow-up is delivered, and that wall time is measured. The
agent is the scripted one and the channel the console one (writing JSONL with an
fsync per delivery group, ``send_many``), both in-process, as in a default installation.

Each repetition is one more round of follow-ups on the same instances (the clock
moves another heartbeat interval), so the transcript grows by a message per
round, as it would in real life. The median round is the figure.

    python bench/pulse_throughput.py                       # SQLite
    python bench/pulse_throughput.py --database postgresql://postgres@127.0.0.1:5432/postgres

Target (issue 4): >= 1,000 follow-ups per second on SQLite.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import time
from datetime import timedelta

from benchlib import machine, median, seed_waiting, throwaway_store

from relay.runner.pulse import Pulse
from relay.testing import FakeClock


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", help="PostgreSQL server URL (default: a temporary SQLite)")
    parser.add_argument("--count", type=int, default=2000, help="instances (follow-ups a round)")
    parser.add_argument("--rounds", type=int, default=5, help="measured repetitions")
    parser.add_argument("--batch", type=int, default=500, help="daemon.batch")
    parser.add_argument("--profile", action="store_true", help="cProfile one more round")
    parser.add_argument(
        "--breakdown", action="store_true", help="time the stages of one more round (wall clock)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    with throwaway_store(args.database) as bench:
        clock = FakeClock()
        relay = bench.relay(clock, **{"daemon.batch": args.batch})
        started = time.monotonic()
        seed_waiting(relay, args.count, heartbeat="1h", max_followups=args.rounds + 5)
        seeded = time.monotonic() - started
        pulse = Pulse(relay, owner="bench")
        rounds = []
        for _ in range(args.rounds):
            clock.advance(timedelta(hours=1))
            rounds.append(measure(pulse, args.count))
        breakdown = None
        if args.breakdown:
            clock.advance(timedelta(hours=1))
            with Stages() as stages:
                total = measure(pulse, args.count)["seconds"]
            breakdown = stages.summary(total, args.count)
        profile = None
        if args.profile:
            clock.advance(timedelta(hours=1))
            profiler = cProfile.Profile()
            profiler.enable()
            measure(pulse, args.count)
            profiler.disable()
            profile = profiler
            if os.environ.get("BENCH_PROFILE_OUT"):
                profiler.dump_stats(os.environ["BENCH_PROFILE_OUT"])
        dialect = relay.store.dialect
        relay.store.dispose()

    rates = [r["per_second"] for r in rounds]
    figures = {
        "database": dialect,
        "count": args.count,
        "batch": args.batch,
        "rounds": rounds,
        "median_per_second": round(median(rates), 1),
        "median_cpu_ms_per_followup": round(median([r["cpu_ms_per_followup"] for r in rounds]), 4),
        "min_per_second": round(min(rates), 1),
        "max_per_second": round(max(rates), 1),
        "seed_seconds": round(seeded, 1),
        "machine": machine(),
    }
    if breakdown is not None:
        figures["breakdown_ms_per_follow_up"] = breakdown
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        report(figures)
    if profile is not None:
        order = os.environ.get("BENCH_SORT", "cumulative")
        lines = int(os.environ.get("BENCH_LINES", "30"))
        pstats.Stats(profile, stream=sys.stdout).sort_stats(order).print_stats(lines)
    return 0


def measure(pulse: Pulse, count: int) -> dict[str, float]:
    fired = sent = passes = 0
    cpu = time.process_time()
    started = time.perf_counter()
    while sent < count:
        report = pulse.run()
        passes += 1
        fired += report.fired
        sent += report.delivery.sent
        if report.idle:
            raise SystemExit(f"stalled: {fired} fired, {sent} delivered of {count}")
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu
    if fired != count:
        raise SystemExit(f"expected {count} heartbeats to fire, {fired} did")
    return {
        "seconds": round(elapsed, 3),
        "per_second": round(count / elapsed, 1),
        # The process's CPU (all threads): steadier than the rate on a busy machine.
        "cpu_ms_per_followup": round(cpu / count * 1000, 4),
        "passes": passes,
    }


def report(figures: dict) -> None:
    print(
        f"pulse throughput on {figures['database']}: {figures['count']} follow-ups a round, "
        f"daemon.batch {figures['batch']}"
    )
    for number, one in enumerate(figures["rounds"], start=1):
        print(
            f"  round {number}: {one['seconds']:.3f}s in {one['passes']} pulses "
            f"-> {one['per_second']:.0f} follow-ups/s, {one['cpu_ms_per_followup']:.3f} ms CPU each"
        )
    verdict = ""
    if figures["database"] == "sqlite":
        met = figures["median_per_second"] >= 1000
        verdict = f"; target >= 1000/s on SQLite: {'met' if met else 'MISSED'}"
    print(
        f"  median {figures['median_per_second']:.0f}/s (min {figures['min_per_second']:.0f}, "
        f"max {figures['max_per_second']:.0f}){verdict}"
    )
    print(f"  seeding took {figures['seed_seconds']}s; {figures['machine']}")
    if "breakdown_ms_per_follow_up" in figures:
        print("  where one follow-up's time goes (ms, wall clock, one extra round):")
        for stage, ms in figures["breakdown_ms_per_follow_up"].items():
            print(f"    {stage:<34} {ms:7.3f}")


class Stages:
    """Wall-clock timers around the stages of a pulse (patched in for one round)."""

    TARGETS = [
        ("heartbeat firing (fire_due)", "relay.engine.conversation.heartbeat", None, "fire_due"),
        ("turn claims", "relay.engine.turns.runner", "TurnRunner", "claim"),
        ("turn contexts (bulk read)", "relay.engine.turns.runner", None, "read_contexts"),
        ("agent calls (scripted)", "relay.engine.turns.runner", "TurnRunner", "_call_agent"),
        ("turn commits (batched)", "relay.engine.turns.commit", "TurnCommitter", "commit_many"),
        ("outbox screen (new rows)", "relay.engine.outbox.dispatcher", "Dispatcher", "screen_new"),
        ("outbox confirm before send", "relay.engine.outbox.dispatcher", "Dispatcher", "_confirm"),
        ("channel send (console, all)", "relay.channels.console", "ConsoleChannel", "_send_many"),
        ("  of which os.fsync", "relay.channels.console", "os", "fsync"),
        ("outbox record as sent", "relay.engine.outbox.dispatcher", "Dispatcher", "_sent"),
    ]

    def __enter__(self) -> Stages:
        import importlib

        self.spent: dict[str, float] = {}
        self.undo: list[tuple[object, str, object]] = []
        for label, module_name, owner_name, attribute in self.TARGETS:
            module = importlib.import_module(module_name)
            owner = getattr(module, owner_name) if owner_name else module
            original = getattr(owner, attribute)
            self.undo.append((owner, attribute, original))
            setattr(owner, attribute, self._timed(label, original))
        return self

    def _timed(self, label: str, original):  # type: ignore[no-untyped-def]
        spent = self.spent

        def timed(*args, **kwargs):  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent[label] = spent.get(label, 0.0) + time.perf_counter() - started

        return timed

    def __exit__(self, *exc: object) -> None:
        for owner, attribute, original in reversed(self.undo):
            setattr(owner, attribute, original)

    def summary(self, total: float, count: int) -> dict[str, float]:
        per = {
            label: round(self.spent.get(label, 0.0) / count * 1000, 3) for label, *_ in self.TARGETS
        }
        counted = sum(v for k, v in per.items() if not k.startswith("  "))
        per["other (pulse bookkeeping, snoozes)"] = round(total / count * 1000 - counted, 3)
        per["total"] = round(total / count * 1000, 3)
        return per


if __name__ == "__main__":
    sys.exit(main())
