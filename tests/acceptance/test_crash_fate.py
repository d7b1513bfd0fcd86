"""A daemon SIGKILLed while Twilio answers its create (Twilio has the SMS, the daemon
never hears so): the daemon started after it asks Twilio's message list and records
the SMS instead of sending it again (issue 32); when Twilio cannot be asked, the SMS
waits with its fate unknown, listed by ``relay doctor``, until ``relay retry``.
Real daemon processes, a loopback Twilio; SQLite and PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chaoslib import ChaosSettings, Daemon, child_env, relay_argv, write_config
from messaging_fakes import FakeTwilio, Scripted, fake_twilio
from sqlalchemy import select

from relay.store.database import Store, make_engine
from relay.store.models import Message
from relay.testing import wait_until

pytestmark = pytest.mark.slow

PHONE = "+15557709002"


class Setup:
    def __init__(self, url: str, folder: Path, api: FakeTwilio) -> None:
        settings = ChaosSettings(seed=0, seconds=0, heartbeat="1h", pulse="1s", poll="1s")
        self.config = write_config(folder / "relay", url, folder / "shared", settings, api.base_url)
        self.store = Store(make_engine(url))

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            relay_argv(self.config, *args),
            cwd=self.config.parent,
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def statuses(self) -> list[str]:
        with self.store.read_transaction() as session:
            query = select(Message.status).where(Message.direction == "outbound")
            return list(session.scalars(query.order_by(Message.id)))


@pytest.fixture
def held_twilio() -> Iterator[tuple[FakeTwilio, threading.Event, threading.Event]]:
    """A Twilio whose first create, once taken, is answered only when released."""
    held, release = threading.Event(), threading.Event()
    with fake_twilio() as api:

        def delay() -> float:
            if not held.is_set():
                held.set()
                release.wait(60)
            return 0.0

        api.answer_delay = delay
        try:
            yield api, held, release
        finally:
            release.set()


def killed_while_twilio_answers(setup: Setup, held: threading.Event) -> Daemon:
    started = setup.cli(
        "start", PHONE, "-o", "the delivery", "-t", "Which day?", "--channel", "sms", "--defer"
    )
    assert started.returncode == 0, started.stderr
    dying = Daemon(setup.config)
    dying.start()
    assert held.wait(90), dying.tail()
    dying.kill()  # Twilio has the SMS; the daemon never hears its sid
    assert setup.statuses() == ["sending"]
    return dying


def test_a_restarted_daemon_records_the_sms_twilio_took_and_sends_it_once(
    db_url: str, tmp_path: Path, held_twilio: Any
) -> None:
    api, held, release = held_twilio
    setup = Setup(db_url, tmp_path, api)
    killed_while_twilio_answers(setup, held)
    release.set()
    daemon = Daemon(setup.config)
    daemon.start()  # takes back the dead daemon's claims at once, then asks Twilio
    try:
        wait_until(lambda: setup.statuses() == ["sent"], timeout=90)
    finally:
        assert daemon.stop() == 0, daemon.tail()
        setup.store.dispose()
    assert len(api.sent) == 1


def test_when_twilio_cannot_be_asked_the_sms_waits_for_the_operator(
    db_url: str, tmp_path: Path, held_twilio: Any
) -> None:
    api, held, release = held_twilio
    setup = Setup(db_url, tmp_path, api)
    killed_while_twilio_answers(setup, held)
    release.set()
    api.list_errors.extend(Scripted(503, {"code": 20500, "message": "down"}) for _ in range(50))
    daemon = Daemon(setup.config)
    daemon.start()
    try:
        wait_until(lambda: setup.statuses() == ["unknown"], timeout=90)
        doctor = setup.cli("doctor", "--json")
        report = json.loads(doctor.stdout)
        assert doctor.returncode == 0 and report["ok"], doctor.stdout
        [notice] = [n for n in report["notices"] if n["subject"].startswith("message ")]
        assert "relay retry" in notice["problem"]
        message_id = notice["subject"].split()[-1]
        assert len(api.sent) == 1
        retried = setup.cli("retry", message_id)
        assert retried.returncode == 0, retried.stderr
        wait_until(lambda: setup.statuses() == ["sent"], timeout=90)
    finally:
        assert daemon.stop() == 0, daemon.tail()
        setup.store.dispose()
    assert len(api.sent) == 2  # the operator allowed the second hand-over
