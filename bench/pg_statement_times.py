"""Where a PostgreSQL server's time goes in a pulse: each statement's duration as the
server logs it, summed by statement.

``--count`` conversations wait for a reply on a fresh database; the clock moves
past their heartbeats and in-process pulses run until every follow-up is
delivered, once unlogged (the statements prepared, the caches warm) and
once on connections that ask the server to log every statement's duration
(``SET log_min_duration_statement = 0``, a superuser's setting, as
the local test server's ``postgres`` role is). The lines this run added to the
server's log (``--log``) are then summed by statement text (parse, bind and
execute of a prepared statement count as its time). The figures include
the logging's own cost; compare statements with each other, not with the
daemon benchmark's CPU figures.

    python bench/pg_statement_times.py --database postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

from benchlib import seed_waiting, throwaway_store
from sqlalchemy import event

from relay.runner.pulse import Pulse
from relay.testing import FakeClock

DURATION = re.compile(r"duration: ([\d.]+) ms\s+(?:statement|(?:parse|bind|execute) [^:]*): (.*)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", required=True, help="PostgreSQL server URL (a superuser)")
    parser.add_argument("--count", type=int, default=1000, help="follow-ups")
    parser.add_argument("--log", default="/var/log/postgresql/postgresql-15-main.log",
                        help="the server's log file (readable by this user)")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    log = Path(args.log)
    with throwaway_store(args.database) as bench:
        clock = FakeClock()
        relay = bench.relay(clock, **{"daemon.batch": 100})
        seed_waiting(relay, args.count, heartbeat="1h", max_followups=10)
        pulse = Pulse(relay, owner="bench")
        clock.advance(timedelta(hours=1))
        while not pulse.run().idle:  # a first round of follow-ups, not logged
            pass
        relay.store.dispose()  # new connections, each logging its statements
        event.listen(relay.store.engine, "connect", _log_durations)
        clock.advance(timedelta(hours=1))
        offset = log.stat().st_size
        while not pulse.run().idle:
            pass
        relay.store.dispose()
    totals, counts = _sum(log, offset)
    whole = sum(totals.values())
    rows = [{"statement": text, "ms": round(ms, 1), "runs": counts[text],
             "share": round(ms / whole, 3) if whole else 0.0}
            for text, ms in totals.most_common(args.top)]
    if not args.json:
        print(f"server time for {args.count} follow-ups: {whole:,.1f} ms "
              f"({whole / args.count:.3f} ms each), {sum(counts.values())} statements")
        for row in rows:
            print(f"{row['ms']:9.1f} ms {row['share']:6.1%} {row['runs']:5d}x  {row['statement']}")
    print(json.dumps({"count": args.count, "server_ms": round(whole, 1), "top": rows}))
    return 0


def _log_durations(dbapi_connection: Any, _record: Any) -> None:
    with dbapi_connection.cursor() as cursor:
        cursor.execute("SET log_min_duration_statement = 0")
    dbapi_connection.commit()


def _sum(log: Path, offset: int) -> tuple[Counter[str], Counter[str]]:
    totals: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    with log.open(encoding="utf-8", errors="replace") as lines:
        lines.seek(offset)
        for line in lines:
            found = DURATION.search(line)
            if found:
                text = " ".join(found.group(2).split())[:90]
                totals[text] += float(found.group(1))
                counts[text] += 1
    return totals, counts


if __name__ == "__main__":
    sys.exit(main())
