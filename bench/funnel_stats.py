"""How long ``relay stats`` takes on a large store.

Seeds N conversations straight into the tables (bulk inserts: contacts,
instances in a mix of states across two campaigns, a delivered first message
each, replies from a third, a todo each, follow-up transitions), then times
``Relay.stats`` for everything and for one campaign::

    python bench/funnel_stats.py --count 1000000 [--database postgresql://...]
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from benchlib import analyze, machine, median, throwaway_store
from sqlalchemy import insert

from relay.store.models import Contact, Instance, Message, Todo, Transition

STATES = ("WAITING_FOR_REPLY", "COMPLETED", "ABANDONED", "FAILED", "NEEDS_HUMAN_INTERVENTION")
CHUNK = 20_000


def _rows(start: int, stop: int, now: datetime) -> dict[str, list[dict[str, Any]]]:
    rows: dict[str, list[dict[str, Any]]] = {
        "contacts": [], "instances": [], "messages": [], "todos": [], "transitions": []
    }  # fmt: skip
    for n in range(start, stop):
        iid = f"b{n:09d}"
        created = now - timedelta(minutes=n % 10_000)
        state = STATES[n % len(STATES)]
        rows["contacts"].append(
            {"id": n + 1, "address": f"+1555{n:07d}", "kind": "phone",
             "created_at": created, "updated_at": created}
        )  # fmt: skip
        rows["instances"].append(
            {"seq": n + 1, "id": iid, "contact_id": n + 1, "state": state,
             "objective": "Confirm the delivery date", "channel": "console", "agent": "scripted",
             "heartbeat_seconds": 3600, "max_followups": 5, "follow_up_count": n % 3,
             "version": 1, "turn_attempts": 0, "created_at": created, "updated_at": created,
             "campaign": f"c{n % 2}"}
        )  # fmt: skip
        rows["messages"].append(
            {"instance_id": iid, "contact_id": n + 1, "direction": "outbound", "author": "agent",
             "body": "Hello", "status": "sent" if n % 20 else "failed", "channel": "console",
             "kind": "message", "attempts": 1, "proactive": 0, "created_at": created,
             "sent_at": created if n % 20 else None, "last_error": None if n % 20 else "bounced"}
        )  # fmt: skip
        if n % 3 == 0:
            rows["messages"].append(
                {"instance_id": iid, "contact_id": n + 1, "direction": "inbound",
                 "author": "contact", "body": "Thursday", "status": "processed",
                 "channel": "console", "kind": "message", "attempts": 0, "proactive": 0,
                 "created_at": created + timedelta(minutes=n % 90)}
            )  # fmt: skip
        rows["todos"].append(
            {"instance_id": iid, "position": 1, "text": "Which day?",
             "status": "completed" if state == "COMPLETED" else "pending", "updated_at": created}
        )  # fmt: skip
        for _ in range(n % 3):
            rows["transitions"].append(
                {"instance_id": iid, "from_state": "HEARTBEAT_SCHEDULED",
                 "to_state": "WAITING_FOR_REPLY", "event": "followup_sent", "actor": "daemon",
                 "created_at": created}
            )  # fmt: skip
    return rows


def seed(relay: Any, count: int) -> None:
    now = datetime.now(UTC)
    tables = {
        "contacts": Contact, "instances": Instance, "messages": Message,
        "todos": Todo, "transitions": Transition,
    }  # fmt: skip
    for start in range(0, count, CHUNK):
        rows = _rows(start, min(count, start + CHUNK), now)
        with relay.store.transaction() as session:
            for name, model in tables.items():
                if rows[name]:
                    session.execute(insert(model), rows[name])
    analyze(relay)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--database", default=None, help="PostgreSQL URL (default: SQLite)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with throwaway_store(args.database) as bench:
        relay = bench.relay()
        began = time.perf_counter()
        seed(relay, args.count)
        print(f"seeded {args.count:,} conversations in {time.perf_counter() - began:.1f}s")
        for campaign in (None, "c1"):
            times = []
            for _ in range(args.runs):
                began = time.perf_counter()
                view = relay.stats(campaign=campaign)
                times.append(time.perf_counter() - began)
            print(
                f"stats campaign={campaign or 'all'}: median {median(times):.2f}s of {args.runs} "
                f"(started {view.started:,}, replied {view.replied:,}, "
                f"median first reply {view.median_first_reply_seconds})"
            )
        relay.store.dispose()
    print(machine())


if __name__ == "__main__":
    main()
