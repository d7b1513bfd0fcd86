"""The crash-and-race harness, long: real daemons SIGKILLed at random moments under
concurrent CLI commands and inbox replies, then a check of the store and the console.

    python bench/chaos.py --minutes 5 --db sqlite                  # one daemon + the CLI
    python bench/chaos.py --minutes 5 --db postgres --daemons 3    # RELAY_TEST_DATABASE_URL
                                                                   # or --url names the server

Prints the seed first (``--seed`` replays a run's choices, not its timing), then a
table and one JSON line of the figures: deliveries, kills, lost, duplicates (and
per channel kind: duplicates_console, duplicates_sms, the extra deliveries of one
message; half the contacts talk over SMS through a loopback Twilio that keeps no
idempotency key), unknown_fate, post_cancel, post_pause, post_opt_out,
out_of_order, stranded, doctor. Exit 0 when every count
that must be zero is zero and the daemons settled. The workload and the checks are
``tests/acceptance/chaoslib.py``, shared with the quick test in the suite.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from pathlib import Path

from benchlib import machine, throwaway_store

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "acceptance"))

from chaoslib import Chaos, ChaosSettings

DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="minutes of work")
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--daemons", type=int, help="default: 1 on SQLite, 3 on PostgreSQL")
    parser.add_argument("--url", help="PostgreSQL server (a database is made and dropped)")
    parser.add_argument("--seed", type=int, help="default: a random one, printed")
    parser.add_argument("--workers", type=int, default=3, help="concurrent CLI commands")
    parser.add_argument("--contacts", type=int, default=8)
    parser.add_argument(
        "--kill-every",
        type=float,
        nargs=2,
        default=(5.0, 20.0),
        metavar="S",
        help="a kill every MIN to MAX seconds of a daemon's uptime",
    )
    parser.add_argument(
        "--sms-latency",
        type=float,
        nargs=2,
        default=(0.05, 0.3),
        metavar="S",
        help="the loopback Twilio answers a create MIN to MAX seconds after taking it",
    )
    args = parser.parse_args()
    daemons = args.daemons or (1 if args.db == "sqlite" else 3)
    if args.db == "sqlite" and daemons != 1:
        parser.error("SQLite takes one daemon per database file (use --db postgres)")
    server = None
    if args.db == "postgres":
        server = args.url or os.environ.get("RELAY_TEST_DATABASE_URL") or DEFAULT_SERVER
    settings = ChaosSettings(
        seed=args.seed if args.seed is not None else random.randrange(2**31),
        seconds=args.minutes * 60,
        daemons=daemons,
        contacts=args.contacts,
        workers=args.workers,
        kill_every=tuple(args.kill_every),
        settle_seconds=120.0,
        sms_latency=tuple(args.sms_latency),
    )
    print(f"# {machine()}", flush=True)
    with throwaway_store(server) as bench:
        result = Chaos(bench.url, bench.folder, settings, say=_say).run()
    print(result.table())
    for problem in result.problems:
        print(f"problem: {problem}")
    print(result.json_line())
    return 0 if result.ok else 1


def _say(text: str) -> None:
    print(text, flush=True)


if __name__ == "__main__":
    sys.exit(main())
