"""`relay mcp` answers bad input with an error rather than never answering (issue 32).

Spoken in raw JSON-RPC over the process's stdio: the SDK's own client cannot even
send a request nesting 300 levels."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth):
        value = {"n": value}
    return value


class Wire:
    def __init__(self, db_url: str, cwd: Path) -> None:
        env = {**os.environ, "RELAY_DATABASE_URL": db_url, "NO_COLOR": "1"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "relay", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
        )

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()

    def answer(self, timeout: float = 60) -> dict[str, Any]:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        assert ready, "relay mcp never answered"
        return dict(json.loads(self.process.stdout.readline()))

    def call(self, number: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        params = {"name": tool, "arguments": arguments}
        self.send({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params})
        found = self.answer()
        assert found["id"] == number
        return dict(found["result"])


def test_a_start_whose_meta_nests_300_levels_is_answered_with_an_error(
    db_url: str, tmp_path: Path
) -> None:
    (tmp_path / "relay.toml").write_text("[channels.console]\necho = false\n")
    wire = Wire(db_url, tmp_path)
    try:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {},
                 "clientInfo": {"name": "test", "version": "1"}}  # fmt: skip
        wire.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
        assert "result" in wire.answer()
        wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        args = {"contact": "+15551230001", "objective": "x", "todos": ["a"]}
        args["run_first_turn"] = False
        deep = wire.call(2, "start", {**args, "meta": _nested(300)})
        assert deep["isError"] and "meta nests more than 32 levels" in deep["content"][0]["text"]
        fine = wire.call(3, "start", {**args, "meta": _nested(3)})
        assert not fine["isError"]
    finally:
        wire.process.kill()
        wire.process.wait(10)
