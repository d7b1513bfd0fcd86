"""A daemon that starts takes back at once the claims of daemons on its host that died
without stopping (found by the crash-and-race harness: after a SIGKILL, the killed
daemon's turn waited out its 5-minute lease and its ``sending`` message its 2-minute
one, so conversations stood still long after the daemon was restarted)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from daemon_support import OTHER, PHONE, pulse, row
from sqlalchemy import select

from relay.engine.daemon import DaemonRunner
from relay.engine.service import Relay
from relay.store import claims
from relay.store.models import Daemon, Message


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _daemon_row(relay: Relay, ident: str, pid: int, host: str | None = None) -> None:
    now = relay.now()
    with relay.store.transaction() as session:
        session.add(
            Daemon(
                id=ident,
                host=host or socket.gethostname(),
                pid=pid,
                started_at=now,
                last_pulse_at=now,
            )
        )


def _claim_everything(relay: Relay, owner: str) -> None:
    """``owner`` claims the due turns and the due deliveries, then "dies"."""
    with relay.store.transaction() as session:
        now = relay.now()
        claims.claim_turns(session, now, owner, timedelta(minutes=5), 10)
        claims.claim_outbox(session, now, timedelta(minutes=2), 10, owner=owner)


def test_a_starting_daemon_takes_back_the_claims_of_a_dead_one_at_once(
    make_relay_here: Callable[..., Relay], clock: Any
) -> None:
    relay = make_relay_here()
    waiting = relay.start(PHONE, "Confirm the date", ["Which day?"], heartbeat="1h").id
    pulse(relay)  # its first message is delivered; now a reply is due a turn
    relay.receive(PHONE, "Thursday")
    fresh = relay.start(OTHER, "Confirm the date", ["Which day?"]).id
    dead, alive = "host:1:dead", "host:2:alive"
    _daemon_row(relay, dead, _dead_pid())
    _daemon_row(relay, alive, os.getppid())  # a live process: its claims stay its own
    _claim_everything(relay, dead)
    with relay.store.transaction() as session:
        message = session.scalar(select(Message).where(Message.instance_id == waiting))
        assert message is not None
        message.status, message.lease_owner = "sending", dead
        message.next_attempt_at = relay.now() + timedelta(minutes=2)

    assert pulse(relay).turns == []  # nothing is due while the leases hold

    DaemonRunner(relay).register()

    assert row(relay, waiting).lease_owner is None
    assert row(relay, fresh).lease_owner is None
    report = pulse(relay)
    assert {t.instance_id for t in report.turns} == {waiting, fresh}
    assert report.delivery.sent >= 2


def test_claims_of_a_live_daemon_or_of_another_host_are_left_alone(
    make_relay_here: Callable[..., Relay],
) -> None:
    relay = make_relay_here()
    first = relay.start(PHONE, "Confirm the date", ["Which day?"]).id
    _daemon_row(relay, "here:alive", os.getppid())
    _claim_everything(relay, "here:alive")
    second = relay.start(OTHER, "Confirm the date", ["Which day?"]).id
    _daemon_row(relay, "elsewhere:dead", _dead_pid(), host="another-host.example")
    _claim_everything(relay, "elsewhere:dead")

    DaemonRunner(relay).register()

    assert row(relay, first).lease_owner == "here:alive"
    assert row(relay, second).lease_owner == "elsewhere:dead"
    assert pulse(relay).turns == []
