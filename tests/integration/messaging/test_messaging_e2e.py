"""End to end: a real ``relay serve`` and a real ``relay daemon`` (subprocesses) on one
store, the loopback Twilio API as the provider. Waits poll with a deadline; nothing sleeps."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from messaging_fakes import ACCOUNT, TOKEN, FakeTwilio, fake_twilio, post_signed
from sqlalchemy import func, select

from relay.store.models import Message

pytestmark = pytest.mark.slow

NUMBER = "+15550001111"
PHONE = "+15551230001"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(check: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.05)  # a poll interval, not a wait for time to pass
    raise AssertionError(f"timed out waiting for {what}")


class Process:
    """A relay subprocess whose stderr goes to a file; killed at teardown if still running."""

    def __init__(self, cwd: Path, env: dict[str, str], *args: str) -> None:
        self.log_path = cwd / f"{args[0]}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "relay", *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
        )

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.terminate()
        try:
            return self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(timeout=10)
        finally:
            self._log.close()

    def text(self) -> str:
        return self.log_path.read_text(errors="replace")


@pytest.fixture
def world(tmp_path: Path, db_url: str) -> Iterator[dict[str, Any]]:
    port = free_port()
    public = f"http://127.0.0.1:{port}"
    with fake_twilio() as fake:
        (tmp_path / "relay.toml").write_text(
            f"""
[defaults]
channel = "sms"
heartbeat = "1h"

[daemon]
pulse = "1s"
poll = "1h"

[channels.sms]
type = "sms"
account_sid = "{ACCOUNT}"
auth_token_env = "TWILIO_TOKEN"
from = "{NUMBER}"
public_url = "{public}"
api_url = "{fake.base_url}"
segments_per_second = 0
"""
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("RELAY_")}
        env.update(NO_COLOR="1", RELAY_DATABASE_URL=db_url, TWILIO_TOKEN=TOKEN)
        serve = Process(tmp_path, env, "serve", "--port", str(port))
        daemon = Process(tmp_path, env, "daemon", "--log-format", "json")
        try:
            wait_for(lambda: _healthy(public), "relay serve to answer /healthz")
            yield {"fake": fake, "public": public, "env": env, "cwd": tmp_path,
                   "serve": serve, "daemon": daemon}  # fmt: skip
        finally:
            codes = (serve.stop(), daemon.stop())
            assert "Traceback" not in serve.text(), serve.text()[-3000:]
            assert "Traceback" not in daemon.text(), daemon.text()[-3000:]
            assert codes == (0, 0), (serve.text()[-2000:], daemon.text()[-2000:])


def _healthy(base: str) -> bool:
    try:
        return httpx.get(base + "/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def relay_json(world: dict[str, Any], *args: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "relay", *args, "--json"],
        cwd=world["cwd"],
        env=world["env"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def inbound_count(relay: Any) -> int:
    with relay.store.transaction() as session:
        query = select(func.count()).select_from(Message).where(Message.direction == "inbound")
        return int(session.scalar(query) or 0)


def test_sms_conversation_through_serve_and_daemon(
    world: dict[str, Any], make_relay: Callable[..., Any], db_url: str
) -> None:
    fake: FakeTwilio = world["fake"]
    relay = make_relay(db_url)
    inbound_url = world["public"] + "/twilio/sms/inbound"

    started = relay_json(world, "start", PHONE, "-o", "the delivery of order 1042",
                         "-t", "Which day suits you?", "-t", "Morning or afternoon?")  # fmt: skip
    instance = started["id"]
    first = wait_for(lambda: fake.sent[:1], "the first message at Twilio")[0]
    assert first.form["StatusCallback"] == world["public"] + "/twilio/sms/status"

    # Twilio reports delivery once the message is recorded as sent with its sid.
    wait_for(lambda: _sid_recorded(relay, first.sid), "the sid to be recorded")
    assert fake.callback(first, "sent") == 200
    assert fake.callback(first, "delivered") == 200

    # relay serve stores the callbacks; the daemon applies them on its next pulse.
    def outbound_statuses() -> list[Any]:
        transcript = relay_json(world, "transcript", instance)
        return [m["delivery_status"] for m in transcript if m["direction"] == "outbound"]

    wait_for(lambda: outbound_statuses() == ["delivered"], "the delivery receipt applied")

    # A reply by webhook; Twilio retrying it stores it once.
    reply = {"From": PHONE, "To": NUMBER, "Body": "Thursday", "MessageSid": "SMreply1"}
    assert post_signed(inbound_url, reply).status_code == 200
    assert post_signed(inbound_url, reply).status_code == 200
    wait_for(lambda: len(fake.sent) >= 2, "the agent's answer at Twilio")
    assert "Morning or afternoon?" in fake.sent[1].form["Body"]
    assert inbound_count(relay) == 1

    # A forged request is refused and stores nothing.
    forged = {**reply, "Body": "forged", "MessageSid": "SMforged"}
    assert post_signed(inbound_url, forged, signature="Zm9yZ2Vk").status_code == 403
    assert inbound_count(relay) == 1

    stop = {"From": PHONE, "To": NUMBER, "Body": "STOP", "MessageSid": "SMstop"}
    assert post_signed(inbound_url, stop).status_code == 200
    contact = relay_json(world, "contact", "show", PHONE)
    assert contact["opted_out_at"] is not None
    assert relay_json(world, "show", instance)["state"] not in ("WAITING_FOR_REPLY", "ACTIVE")


def _sid_recorded(relay: Any, sid: str) -> bool:
    with relay.store.transaction() as session:
        query = select(Message.id).where(Message.provider_message_id == sid)
        return session.scalar(query) is not None
