"""``relay tick`` (the cron path) and ``relay status``'s view of daemons, in-process.

The CLI runs on the real clock, so the fake clock is set to the real time
(minus whatever the test needs to be overdue) before the API prepares data.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from backends import SQLITE_ONLY
from daemon_support import PHONE, events, row, start_waiting
from engine_relay import EngineRelay as Relay

from relay.store.models import Daemon

MINUTE = timedelta(minutes=1)


def real_now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def test_relay_tick_fires_due_heartbeats(relay: Relay, clock: Any, cli: Callable[..., Any]):
    clock.set(real_now() - timedelta(hours=2))
    iid = start_waiting(relay, heartbeat="1h")  # due an hour ago, in real time

    ticked = cli("tick", "--json", "--no-poll")
    assert ticked.exit_code == 0, ticked
    report = ticked.json()
    assert (report["heartbeats_fired"], report["delivered"]) == (1, 1)
    assert [t["reason"] for t in report["turns"]] == ["follow_up"]
    assert row(relay, iid).follow_up_count == 1
    assert events(relay, iid, "heartbeat_fires") == 1

    again = cli("tick", "--no-poll")
    assert again.exit_code == 0 and again.stdout == "Nothing due.\n"  # one line, no zeros
    assert events(relay, iid, "heartbeat_fires") == 1


def test_relay_tick_abandons_after_the_last_follow_up(
    relay: Relay, clock: Any, cli: Callable[..., Any]
) -> None:
    clock.set(real_now() - timedelta(hours=2))
    iid = start_waiting(relay, heartbeat="1h", max_followups=0)
    ticked = cli("tick", "--no-poll")
    assert ticked.exit_code == 0, ticked
    assert "abandoned" in ticked.stdout
    assert row(relay, iid).state == "ABANDONED"


def _add_daemon(relay: Relay, ident: str, last_pulse: datetime, **extra: Any) -> None:
    with relay.store.transaction() as session:
        session.add(
            Daemon(
                id=ident,
                host=socket.gethostname(),
                pid=os.getpid(),
                started_at=last_pulse - timedelta(hours=1),
                last_pulse_at=last_pulse,
                **extra,
            )
        )


def test_status_warns_when_work_is_overdue_and_no_daemon_pulses(
    relay: Relay, clock: Any, cli: Callable[..., Any]
) -> None:
    now = real_now()
    clock.set(now - 10 * MINUTE)
    relay.start(PHONE, "Confirm the date", ["Which day?"])  # its first turn is due, not run

    status = cli("status", "--json")
    assert status.exit_code == 0, status
    data = status.json()
    assert data["work_due"] == 1 and data["daemons"] == []
    assert len(data["warnings"]) == 1
    assert "no daemon is running" in data["warnings"][0]
    text = cli("status")
    assert "no daemon is running" in text.stderr

    # A daemon that pulsed a moment ago is live, and the warning goes.
    _add_daemon(relay, "host:1:live", now - timedelta(seconds=5))
    # One that was killed (never recorded its stop) and one that stopped are not live.
    _add_daemon(relay, "host:2:killed", now - 30 * MINUTE)
    _add_daemon(relay, "host:3:stopped", now - 5 * MINUTE, stopped_at=now - 5 * MINUTE)
    data = cli("status", "--json").json()
    assert [d["id"] for d in data["daemons"]] == ["host:1:live"]
    assert data["warnings"] == []
    text = cli("status")
    assert "host:1:live" in text.stdout and "host:2:killed" not in text.stdout
    assert "warning" not in text.stderr


def test_status_warns_as_soon_as_work_falls_due_with_no_daemon(
    relay: Relay, clock: Any, cli: Callable[..., Any]
) -> None:
    """Issue 28: the warning comes as soon as work is due and no daemon is alive (it
    was given only after two minutes, which left `relay wait` in silence meanwhile)."""
    clock.set(real_now() - 30 * timedelta(seconds=1))
    relay.start(PHONE, "Confirm the date", ["Which day?"])
    data = cli("status", "--json").json()
    assert data["work_due"] == 1 and len(data["warnings"]) == 1


def test_held_work_is_not_due(relay: Relay, clock: Any, cli: Callable[..., Any]) -> None:
    from daemon_support import pulse

    clock.set(real_now() - 10 * MINUTE)
    now_utc = clock.now()
    closed = "sat" if now_utc.weekday() != 5 else "sun"
    relay.start(PHONE, "Confirm the date", ["Which day?"], window=f"{closed} 09:00-09:01")
    pulse(relay)  # the first message is held for the window
    data = cli("status", "--json").json()
    assert data["work_due"] == 0 and data["warnings"] == []


@SQLITE_ONLY
def test_daemon_status_without_a_daemon(cli: Callable[..., Any]) -> None:
    status = cli("daemon", "status")
    assert status.exit_code == 3
    assert "no daemon is running here" in status.stdout
    assert cli("daemon", "status", "--json").json() == {
        "schema_version": 1,
        "running": False,
        "pid": None,
    }
    stopped = cli("daemon", "stop")
    assert stopped.exit_code == 0 and "no daemon is running here" in stopped.stdout


def test_status_counts_states_as_one_grouping_would(relay: Relay) -> None:
    """On SQLite COMPLETED is the total minus the other states' counts; with none
    completed, and with some, the figures are those of a plain GROUP BY."""
    from sqlalchemy import func, select, update

    from relay.store.models import Instance

    def grouped() -> dict[str, int]:
        with relay.store.read_transaction() as session:
            rows = session.execute(select(Instance.state, func.count()).group_by(Instance.state))
            return {state: int(count) for state, count in rows}

    def shown() -> dict[str, int]:
        return {state: count for state, count in relay.status().states.items() if count}

    ids = [relay.start(f"+1 555 123 {n:04d}", "Count me", ["Which day?"]).id for n in range(5)]
    relay.cancel(ids[0])
    assert shown() == grouped() and "COMPLETED" not in shown()
    with relay.store.transaction() as session:
        session.execute(
            update(Instance)
            .where(Instance.id.in_(ids[1:3]))
            .values(state="COMPLETED", contact_slot=None)
        )
    assert shown() == grouped() and shown()["COMPLETED"] == 2
