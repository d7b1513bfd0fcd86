"""`relay wait` and `relay events --follow` against a real daemon process producing the
events (wall time: the daemon pulses every second; a 10s heartbeat leaves a loaded
machine time to start the waiting processes before follow-ups begin)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from daemon_support import PHONE, DaemonProcess, child_env, daemon_row, relay_command, run_relay

from relay.testing import wait_until

CONFIG = '[channels.console]\necho = false\n[daemon]\npulse = "1s"\n'


def _json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_wait_and_follow_see_what_a_daemon_does(make_relay: Any, db_url: str, tmp_path: Path):
    relay = make_relay(db_url)
    work = tmp_path / "work"
    work.mkdir()
    (work / "relay.toml").write_text(CONFIG)
    env = child_env(db_url)
    follow = subprocess.Popen(
        relay_command("events", "--follow", "--json"),
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    daemon = DaemonProcess(work, env).start()
    try:
        wait_until(lambda: daemon_row(relay, daemon.pid), timeout=30)
        started = run_relay(
            work, "start", PHONE, "-o", "the delivery", "--todo", "Which day?::date",
            "--heartbeat", "10s", "--max-followups", "5", "--defer", "--meta", "job=42", "--json",
            env=env,
        )  # fmt: skip
        assert started.returncode == 0, started.stderr
        iid = json.loads(started.stdout)["id"]
        # The cursor before the reply: the wait counts replies after it, however late
        # the waiting process starts (the race-free way a program waits for a reply).
        since = str(relay.events()[-1].id)
        waiting = subprocess.Popen(
            relay_command(
                "wait", iid, "--for", "reply", "--since", since, "--timeout", "60s", "--json"
            ),
            cwd=work,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        wait_until(lambda: relay.get(iid).state == "WAITING_FOR_REPLY", timeout=30)
        assert run_relay(work, "receive", PHONE, "Tuesday 2024-05-07", env=env).returncode == 0
        out, _ = waiting.communicate(timeout=60)
        assert waiting.returncode == 0, out
        assert json.loads(out)["event"]["kind"] == "message.received"
        answered = run_relay(work, "wait", iid, "--for", "answer", "--timeout", "60s", env=env)
        assert answered.returncode == 0, answered
        done = run_relay(work, "wait", iid, "--timeout", "60s", "--json", env=env)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["instances"][0]["state"] == "COMPLETED"
        assert relay.result(iid).answers == {"1": "2024-05-07"}
        time.sleep(2.5)  # one poll of the follower (at most 2s) after the end
    finally:
        daemon.stop()
        follow.terminate()
    lines = _json_lines(follow.communicate(timeout=30)[0])
    mine = [e for e in lines if e["instance_id"] == iid]
    cursors = [int(e["cursor"]) for e in lines]
    assert cursors == sorted(set(cursors))
    assert {"command", "message.sent", "message.received", "answer.recorded"} <= {
        e["kind"] for e in mine
    }
    assert all(e["meta"] == {"job": "42"} for e in mine)
    assert any(e["kind"] == "state.changed" and e["data"]["to"] == "COMPLETED" for e in mine)
