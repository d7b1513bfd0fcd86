"""Helpers for the heartbeat-daemon tests (imported by the tests and ``conftest.py``).

Everything here drives real components: the service API, ``Pulse`` (what
``relay tick`` and each daemon pulse run), the store, and ``relay daemon`` as a
real subprocess. Nothing waits for time to pass except :class:`DaemonProcess`,
which polls with a deadline.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from engine_relay import EngineRelay as Relay
from sqlalchemy import func, select

from relay.runner.pulse import Pulse, PulseReport
from relay.store.models import Daemon, EventRow, Instance, Message

PHONE = "+15551230001"
OTHER = "+15551230002"
OBJECTIVE = "Confirm the delivery date"
TODOS = ("Which day suits you?", "Morning or afternoon?")

T = TypeVar("T")


# -- the engine, in-process ------------------------------------------------------------------


def pulse(relay: Relay, owner: str = "test-pulse") -> PulseReport:
    """One pass over all due work, as ``relay tick`` and each daemon pulse do."""
    return Pulse(relay, owner=owner).run()


def start_waiting(relay: Relay, contact: str = PHONE, **options: Any) -> str:
    """Start an instance and run its first turn: it waits for a reply, heartbeat pending."""
    options.setdefault("heartbeat", "1h")
    view = relay.start(contact, OBJECTIVE, list(TODOS), **options)
    pulse(relay)
    assert row(relay, view.id).state == "WAITING_FOR_REPLY", history(relay, view.id)
    return view.id


def row(relay: Relay, instance_id: str) -> Instance:
    with relay.store.transaction() as session:
        found = session.scalar(select(Instance).where(Instance.id == instance_id))
        assert found is not None
        return found


def history(relay: Relay, instance_id: str) -> list[tuple[str, str | None, str, str]]:
    """(event, from, to, actor) rows of the transition log, oldest first."""
    with relay.store.transaction() as session:
        rows = session.scalars(
            select(EventRow)
            .where(EventRow.instance_id == instance_id, EventRow.to_state.is_not(None))
            .order_by(EventRow.id)
        ).all()
        return [(r.event, r.from_state, r.to_state, r.actor) for r in rows]


def events(relay: Relay, instance_id: str, event: str) -> int:
    return sum(1 for e in history(relay, instance_id) if e[0] == event)


def outbound(relay: Relay, instance_id: str) -> list[Message]:
    """The instance's outbound messages (any status), oldest first."""
    with relay.store.transaction() as session:
        return list(
            session.scalars(
                select(Message)
                .where(Message.instance_id == instance_id, Message.direction == "outbound")
                .order_by(Message.id)
            ).all()
        )


def sent_texts(relay: Relay, instance_id: str) -> list[str]:
    return [m.body for m in outbound(relay, instance_id) if m.status == "sent"]


def at(text: str) -> datetime:
    """``at("2026-03-28 16:30")`` -> that UTC instant."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# -- the daemon, as a subprocess ---------------------------------------------------------------


def relay_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "relay", *args]


def child_env(database_url: str | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAY_")}
    env["NO_COLOR"] = "1"
    if database_url:
        env["RELAY_DATABASE_URL"] = database_url
    env.update(extra)
    return env


def run_relay(
    cwd: Path, *args: str, env: Mapping[str, str], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        relay_command(*args),
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@dataclass
class DaemonProcess:
    """``relay daemon`` in the foreground, its log in a file (never a full pipe)."""

    cwd: Path
    env: Mapping[str, str]
    args: tuple[str, ...] = ("--log-format", "json")
    process: subprocess.Popen[bytes] | None = None
    log_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.cwd.mkdir(parents=True, exist_ok=True)
        self.log_path = self.cwd / "daemon-stderr.log"

    def start(self) -> DaemonProcess:
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in wait()
        self.process = subprocess.Popen(
            relay_command("daemon", *self.args),
            cwd=self.cwd,
            env=dict(self.env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
        )
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def signal(self, signum: int = signal.SIGTERM) -> None:
        assert self.process is not None
        self.process.send_signal(signum)

    def wait(self, timeout: float = 30.0) -> int:
        """The exit code; a daemon that does not exit in time is killed (never left
        running behind the test) and the test fails with the end of its log."""
        assert self.process is not None
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
            raise AssertionError(
                f"the daemon did not exit within {timeout}s; its log ends:\n{self.text()[-2000:]}"
            ) from None
        finally:
            self._log.close()

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait; returns the exit code."""
        if self.process is not None and self.process.poll() is None:
            self.signal(signal.SIGTERM)
        return self.wait(timeout)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        if hasattr(self, "_log"):
            self._log.close()

    def text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def records(self) -> list[dict[str, Any]]:
        """The JSON log lines (``--log-format json``); a line that is not JSON fails."""
        lines = [line for line in self.text().splitlines() if line.strip()]
        return [json.loads(line) for line in lines]


def live_daemons(relay: Relay) -> list[Daemon]:
    with relay.store.transaction() as session:
        return list(session.scalars(select(Daemon).where(Daemon.stopped_at.is_(None))).all())


def daemon_row(relay: Relay, pid: int) -> Daemon | None:
    with relay.store.transaction() as session:
        return session.scalar(select(Daemon).where(Daemon.pid == pid))


def count_sent_after(relay: Relay, first_id: int) -> int:
    with relay.store.transaction() as session:
        return int(
            session.scalar(
                select(func.count())
                .select_from(Message)
                .where(Message.id > first_id, Message.status == "sent")
            )
            or 0
        )


def soon(seconds: float) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds)
