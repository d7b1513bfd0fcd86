"""End to end: the installed ``relay`` command in a subprocess, in a fresh directory."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow


def _relay_command() -> str:
    beside = Path(sys.executable).parent / "relay"
    if beside.exists():
        return str(beside)
    found = shutil.which("relay")
    if found is None:
        pytest.fail("the relay console script is not installed (pip install -e .)")
    return found


def test_a_conversation_lifecycle_through_the_installed_command(tmp_path: Path) -> None:
    relay = _relay_command()
    workdir = tmp_path / "fresh"
    workdir.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAY_")}
    env["NO_COLOR"] = "1"

    def run(*args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [relay, *args], cwd=workdir, env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == code, (args, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
        return done

    def run_json(*args: str) -> Any:
        return json.loads(run(*args, "--json").stdout)

    assert "wrote" in run("init").stdout
    assert (workdir / "relay.toml").is_file()
    assert (workdir / ".relay" / "relay.db").is_file()
    run("init", code=2)

    started = run_json(
        "start", "+1 555 123 0001", "--objective", "Confirm the delivery date",
        "--todo", "Ask for the date", "--todo", "Confirm the address", "--defer",
    )  # fmt: skip
    instance_id = started["id"]
    assert started["state"] == "CREATED"
    queued = run_json("start", "+15551230001", "-o", "Second", "-t", "One", "--defer")
    assert queued["state"] == "QUEUED"

    listed = run_json("list")
    assert [item["id"] for item in listed] == [queued["id"], instance_id]
    second = listed[1]["todos"][1]
    assert (second["id"], second["text"], second["status"]) == (2, "Confirm the address", "pending")

    assert run("pause", instance_id[:5]).stdout.strip() == f"{instance_id} PAUSED (was CREATED)"
    run("pause", instance_id, code=1)
    assert run("resume", instance_id).stdout.strip() == f"{instance_id} CREATED"
    cancelled = run_json("cancel", instance_id)
    assert (cancelled["state"], cancelled["failure_reason"]) == ("FAILED", "cancelled")
    assert run_json("show", queued["id"])["state"] == "CREATED"  # promoted

    run("show", "zzzzzzz", code=2)
    run("start", "not a contact", "-o", "x", "-t", "y", "--defer", code=2)

    status = run_json("status")
    assert status["states"]["FAILED"] == 1
    assert status["states"]["CREATED"] == 1
    assert status["queue_depth"] == 0
    history = run_json("history", instance_id)
    assert [h["event"] for h in history] == ["start", "pause", "resume", "cancel"]
    assert (workdir / ".relay" / "relay.db").stat().st_size > 0
