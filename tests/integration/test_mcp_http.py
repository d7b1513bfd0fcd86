"""`relay mcp --http`: the SDK's Streamable HTTP client against a real server process
on loopback (an ephemeral port), with and without the bearer token."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from test_mcp import FAILURES, PHONE, _data, check_failures, fill

TOKEN = "test-token-8c1f0d5e"


@pytest.fixture
def server(db_url: str, tmp_path: Path) -> Iterator[str]:
    """``relay mcp --http --port 0`` in its own process; yields its URL."""
    (tmp_path / "relay.toml").write_text(
        '[channels.console]\necho = false\n[mcp]\nmax_wait = "1s"\n'
    )
    env = {
        **os.environ,
        "RELAY_DATABASE_URL": db_url,
        "RELAY_MCP_TOKEN": TOKEN,
        "NO_COLOR": "1",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "relay", "--actor", "assistant", "mcp", "--http", "--port", "0"],
        cwd=tmp_path,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert "MCP on http://127.0.0.1:" in line, line
        yield line.split(" on ", 1)[1].split(" ", 1)[0]
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


async def _with_session(url: str, headers: dict[str, str], script: Any) -> Any:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await script(session)


def test_a_request_without_the_token_or_from_a_foreign_origin_is_refused(server: str) -> None:
    hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    plain = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    bare = httpx2.post(server, json=hello, headers=plain)
    assert bare.status_code == 401 and bare.headers["www-authenticate"].startswith("Bearer")
    wrong = httpx2.post(server, json=hello, headers={**plain, "authorization": "Bearer nope"})
    assert wrong.status_code == 401
    foreign = {**plain, "authorization": f"Bearer {TOKEN}", "origin": "https://evil.example"}
    refused = httpx2.post(server, json=hello, headers=foreign)
    assert refused.status_code == 403 and "origin" in refused.json()["error"]

    async def nothing(session: ClientSession) -> None:
        return None

    # The SDK's client without the token gets no session at all.
    with pytest.raises(BaseException):  # noqa: B017 (the SDK raises a group of its own)
        anyio.run(_with_session, server, {}, nothing)


def test_the_sdk_client_with_the_token_gets_meanings_and_bounded_waits(
    server: str, cli: Any
) -> None:
    iid = cli("start", PHONE, "-o", "x", "--todo", "Day?", "--defer", "--json").json()["id"]
    assert cli("pause", iid).exit_code == 0
    started = cli("start", "+15551230002", "-o", "x", "--todo", "Day?", "--defer", "--json")
    other = started.json()["id"]
    auth = {"authorization": f"Bearer {TOKEN}"}

    async def script(session: ClientSession) -> Any:
        results = [await session.call_tool(tool, fill(args, iid)) for tool, args, _, _ in FAILURES]
        results.append(await session.call_tool("pause", {"instance_id": iid}))
        waited = _data(
            await session.call_tool(
                "wait", {"instance_ids": [other], "until": "reply", "timeout": "10m"}
            )
        )
        return session.server_info, results, waited

    info, results, waited = anyio.run(_with_session, server, auth, script)
    from relay import __version__

    assert info is not None and info.version == __version__
    answers = iter(results)
    check_failures(lambda tool, args: next(answers), cli, iid)
    # The server's limit (max_wait = 1s) cut the 10-minute wait short: `next` goes on.
    assert waited["outcome"] == "timeout" and waited["waited_seconds"] < 30
    follow = waited["next"]
    assert follow["instance_ids"] == [other] and follow["until"] == "reply"
    assert follow["since"] == waited["cursor"]
    assert 500 < int(follow["timeout"].rstrip("s")) <= 600
