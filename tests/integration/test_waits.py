"""Waits that say why they wait: with work due and no daemon alive, ``relay wait`` (the
CLI, the API, MCP) warns at once and, with --require-daemon, exits 6 instead of waiting;
``relay status`` warns as soon as work is due."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from relay.engine.verbs.waiting import EXIT_CODES
from relay.store.models import Daemon

PHONE = "+15551230001"
Cli = Callable[..., Any]


def _due_work(relay: Any) -> str:
    """A conversation whose first turn is due now and that nobody runs."""
    return str(relay.start(PHONE, "Confirm the date", ["Which day?"], defer=True).id)


def _live_daemon(relay: Any) -> None:
    now = relay.now()
    with relay.store.transaction() as session:
        session.add(
            Daemon(
                id="host:1:live",
                host=socket.gethostname(),
                pid=os.getpid(),
                started_at=now - timedelta(hours=1),
                last_pulse_at=now - timedelta(seconds=5),
            )
        )


class Sleeps:
    """Stands in for ``time.sleep``: records each pause and when a warning came."""

    def __init__(self) -> None:
        self.pauses: list[float] = []
        self.warned_after: list[int] = []

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)

    def warn(self, message: str) -> None:
        self.warned_after.append(len(self.pauses))


def test_a_wait_warns_before_it_first_sleeps(relay_api: Any) -> None:
    from relay.engine.verbs.waiting import wait

    iid = _due_work(relay_api)
    sleeps = Sleeps()
    outcome = wait(
        relay_api, [iid], timeout="5s", on_warning=sleeps.warn, sleep=sleeps.sleep, poll=60
    )
    # Warned once, before any pause (the clock of the wait never moved for it).
    assert sleeps.warned_after == [0]
    assert outcome.outcome == "timeout" and len(outcome.warnings) == 1
    assert "no daemon is running" in outcome.warnings[0]
    assert outcome.to_json()["warnings"] == list(outcome.warnings)


def test_require_daemon_ends_the_wait_at_once(relay_api: Any) -> None:
    from relay.engine.verbs.waiting import wait

    iid = _due_work(relay_api)
    sleeps = Sleeps()
    outcome = wait(relay_api, [iid], timeout="1h", require_daemon=True, sleep=sleeps.sleep)
    assert (outcome.outcome, outcome.exit_code, sleeps.pauses) == ("no_daemon", 6, [])
    assert EXIT_CODES["no_daemon"] == 6


def test_no_warning_with_a_live_daemon_or_nothing_due(relay_api: Any, clock: Any) -> None:
    from relay.engine.verbs.waiting import wait

    iid = _due_work(relay_api)
    _live_daemon(relay_api)
    sleeps = Sleeps()
    outcome = wait(relay_api, [iid], timeout="1s", sleep=sleeps.sleep, require_daemon=True)
    assert (outcome.outcome, outcome.warnings) == ("timeout", ())
    assert relay_api.unattended() == []


def test_a_wait_looks_again_while_it_waits(relay_api: Any, monkeypatch: Any) -> None:
    """Nothing due when the wait began; work falls due meanwhile (here: a start
    elsewhere): the next look, RECHECK seconds later, warns."""
    from relay.engine.verbs import waiting
    from relay.runner.pulse import Pulse

    first = _due_work(relay_api)
    Pulse(relay_api, "test").run()  # the first turn ran: nothing is due now
    assert relay_api.unattended() == []
    monkeypatch.setattr(waiting, "RECHECK", 0.0)
    warned: list[str] = []

    def sleep(seconds: float) -> None:
        if not relay_api.unattended():
            relay_api.start("+15551230002", "Another", ["Ask?"], defer=True)

    outcome = waiting.wait(
        relay_api, [first], timeout="1h", on_warning=warned.append, sleep=sleep, require_daemon=True
    )
    assert outcome.outcome == "no_daemon"
    assert len(warned) == 1 and outcome.warnings == tuple(warned)


def test_relay_wait_require_daemon_exits_6(cli: Cli) -> None:
    iid = cli("start", PHONE, "-o", "x", "--todo", "Day?", "--defer", "--json").json()["id"]
    waited = cli("wait", iid, "--timeout", "5s", "--require-daemon", "--json")
    assert waited.exit_code == 6, waited
    data = waited.json()
    assert data["outcome"] == "no_daemon" and data["exit_code"] == 6
    assert "no daemon is running" in data["warnings"][0]
    assert "no daemon is running" in waited.stderr


def test_relay_status_warns_as_soon_as_work_is_due(cli: Cli) -> None:
    cli("start", PHONE, "-o", "x", "--todo", "Day?", "--defer")
    data = cli("status", "--json").json()
    assert data["work_due"] == 1 and data["daemons"] == []
    assert "no daemon is running" in data["warnings"][0]


def test_relay_wait_warns_within_a_second(db_url: str, cli: Cli, tmp_path: Path) -> None:
    """The done-when of issue 28, end to end: `relay wait ID --timeout 5s` with due
    work and no daemon says so on stderr within a second of starting to wait."""
    iid = cli("start", PHONE, "-o", "x", "--todo", "Day?", "--defer", "--json").json()["id"]
    env = {**os.environ, "RELAY_DATABASE_URL": db_url, "NO_COLOR": "1"}
    began = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "relay", "wait", iid, "--timeout", "5s"],
        cwd=tmp_path,
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    lines: list[tuple[float, str]] = []

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append((time.monotonic() - began, line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    ended = time.monotonic() - began
    reader.join(timeout=5)
    assert process.returncode == 4  # it still waited: no --require-daemon
    warnings = [(at, line) for at, line in lines if "relay: warning:" in line]
    assert warnings and "no daemon is running" in warnings[0][1]
    # Within the first second of the 5-second wait: at least 4 of them were still to
    # come when it warned (measured from the end, so the interpreter's start-up on a
    # busy machine does not count against the wait).
    assert ended - warnings[0][0] >= 4.0, (ended, lines)
