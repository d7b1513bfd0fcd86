"""`relay mcp`, driven by the MCP SDK's own client over stdio against a real store."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

PHONE = "+15551230001"
TOOLS = {
    "start", "status", "show", "transcript", "result", "wait",
    "send", "pause", "resume", "cancel", "events", "drafts", "approve", "reject",
}  # fmt: skip


def _data(result: Any) -> Any:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


async def _session_run(db_url: str, work: Path, script: Any, errlog: Any = None) -> Any:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "relay", "--actor", "assistant", "mcp"],
        env={"RELAY_DATABASE_URL": db_url, "NO_COLOR": "1"},
        cwd=str(work),
    )
    async with (
        stdio_client(params, errlog=errlog or sys.stderr) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await script(session)


def _error(result: Any) -> tuple[str, dict[str, Any]]:
    """A tool error's text and its structured ``error``."""
    assert result.is_error, result
    assert result.structured_content is not None, result.content
    return result.content[0].text, result.structured_content["error"]


#: What the CLI prints for each failure a program is likely to make, and its kind.
FAILURES = [
    ("show", {"instance_id": "zzzzzzz"}, ["show", "zzzzzzz"], "not_found"),
    ("start", {"contact": "not a contact", "objective": "x", "todos": ["Day?"]},
     ["start", "not a contact", "-o", "x", "--todo", "Day?"], "invalid"),
    ("wait", {"instance_ids": ["{iid}"], "until": "someday"},
     ["wait", "{iid}", "--for", "someday"], "invalid"),
    ("pause", {"instance_id": "{iid}"}, ["pause", "{iid}"], "refused"),
]  # fmt: skip


def fill(args: dict[str, Any], iid: str) -> dict[str, Any]:
    """A FAILURES call's arguments with the conversation's id put in."""

    def one(value: Any) -> Any:
        if value == ["{iid}"]:
            return [iid]
        return value.replace("{iid}", iid) if isinstance(value, str) else value

    return {key: one(value) for key, value in args.items()}


def check_failures(call: Any, cli: Any, iid: str) -> None:
    """Each failure: the tool's text is the CLI's stderr line, with its kind as data."""
    for tool, args, argv, kind in FAILURES:
        text, error = _error(call(tool, fill(args, iid)))
        printed = cli(*[a.replace("{iid}", iid) for a in argv])
        assert printed.exit_code == error["exit_code"], (tool, printed)
        assert text == printed.stderr.strip(), tool
        assert error["kind"] == kind, (tool, error)
        assert text == f"relay: error: {error['message']}"
    text, error = _error(call("pause", {"instance_id": iid}))
    assert error["state"] == "PAUSED" and error["instance_id"] == iid
    assert sorted(error["commands"]) == [f"relay cancel {iid}", f"relay resume {iid}"]
    assert sorted(error["tools"]) == ["cancel", "resume"]
    assert "what works now" in text


def test_errors_reach_the_client_with_their_meaning(db_url: str, tmp_path: Path, cli: Any) -> None:
    (tmp_path / "relay.toml").write_text("[channels.console]\necho = false\n")
    iid = cli("start", PHONE, "-o", "x", "--todo", "Day?", "--defer", "--json").json()["id"]
    assert cli("pause", iid).exit_code == 0
    errlog = (tmp_path / "server.err").open("w+")

    async def script(session: ClientSession) -> list[Any]:
        calls = [(tool, args) for tool, args, _, _ in FAILURES] + [("pause", {"instance_id": iid})]
        results = []
        for tool, args in calls:
            results.append(await session.call_tool(tool, fill(args, iid)))
        return [session.server_info, results]

    info, results = anyio.run(_session_run, db_url, tmp_path, script, errlog)
    from relay import __version__

    assert info is not None and info.version == __version__
    by_call = iter(results)
    check_failures(lambda tool, args: next(by_call), cli, iid)
    errlog.seek(0)
    logged = errlog.read()
    assert "Traceback" not in logged and "Error executing tool" not in logged, logged


def test_a_program_delegates_a_conversation_over_mcp(db_url: str, tmp_path: Path, cli: Any):
    (tmp_path / "relay.toml").write_text("[channels.console]\necho = false\n")

    async def script(session: ClientSession) -> dict[str, Any]:
        tools = await session.list_tools()
        names = {tool.name for tool in tools.tools}
        assert names >= TOOLS
        start = next(t for t in tools.tools if t.name == "start")
        assert start.input_schema["properties"]["todos"]["type"] == "array"
        assert set(start.input_schema["required"]) == {"contact", "objective", "todos"}
        started = _data(
            await session.call_tool(
                "start",
                {
                    "contact": PHONE,
                    "objective": "the delivery",
                    "todos": ["Which day suits you?::date"],
                    "meta": {"task": "T-1"},
                },
            )
        )
        iid = started["id"]
        assert (started["state"], started["meta"]) == ("WAITING_FOR_REPLY", {"task": "T-1"})
        timed_out = _data(await session.call_tool("wait", {"instance_ids": [iid], "timeout": "1s"}))
        assert timed_out["outcome"] == "timeout"
        # The contact answers (as a channel would); the agent's turn runs.
        assert cli("receive", PHONE, "2024-05-03").exit_code == 0
        assert cli("tick").exit_code == 0
        done = _data(await session.call_tool("wait", {"instance_ids": [iid], "until": "done"}))
        assert done["outcome"] == "met"
        result = _data(await session.call_tool("result", {"instance_id": iid}))
        transcript = _data(await session.call_tool("transcript", {"instance_id": iid}))
        status = _data(await session.call_tool("status", {}))
        missing = await session.call_tool("show", {"instance_id": "zzzzzzz"})
        return {
            "result": result,
            "transcript": transcript,
            "status": status,
            "missing": missing,
        }

    out = anyio.run(_session_run, db_url, tmp_path, script)
    assert out["result"]["answers"] == {"1": "2024-05-03"}
    assert out["result"]["final"] is True and out["result"]["meta"] == {"task": "T-1"}
    assert out["transcript"]["messages"][1]["text"] == "2024-05-03"
    assert out["status"]["states"]["COMPLETED"] == 1
    assert out["missing"].is_error
    commands = [
        json.loads(line)
        for line in cli("events", "--json").stdout.splitlines()
        if '"command"' in line
    ]
    assert [(c["data"]["command"], c["actor"]) for c in commands] == [("start", "assistant")]


def test_operator_tools_over_mcp(db_url: str, tmp_path: Path) -> None:
    (tmp_path / "relay.toml").write_text("[channels.console]\necho = false\n")

    async def script(session: ClientSession) -> list[str]:
        args = {"contact": PHONE, "objective": "x", "todos": ["Which day?"]}
        iid = _data(await session.call_tool("start", {**args, "run_first_turn": False}))["id"]
        states = [_data(await session.call_tool("pause", {"instance_id": iid}))["state"]]
        states.append(_data(await session.call_tool("resume", {"instance_id": iid}))["state"])
        sent = await session.call_tool("send", {"instance_id": iid, "text": "hi"})
        states.append("refused" if sent.is_error else "sent")
        states.append(_data(await session.call_tool("cancel", {"instance_id": iid}))["state"])
        found = _data(await session.call_tool("events", {"instance_id": iid}))
        states.append(str(len(found["events"]) > 4))
        return states

    assert anyio.run(_session_run, db_url, tmp_path, script) == [
        "PAUSED",
        "CREATED",
        "sent",
        "FAILED",
        "True",
    ]


def test_drafts_over_mcp_and_the_cli(db_url: str, tmp_path: Path, cli: Any) -> None:
    """A conversation started with approval all delivers nothing until approved; the
    same verbs from MCP and the CLI, with their JSON shapes."""
    (tmp_path / "relay.toml").write_text("[channels.console]\necho = false\n")

    async def script(session: ClientSession) -> dict[str, Any]:
        args = {"contact": PHONE, "objective": "x", "todos": ["Which day?"], "approval": "all"}
        started = _data(await session.call_tool("start", args))
        listed = _data(await session.call_tool("drafts", {}))["drafts"]
        bad = await session.call_tool("approve", {"message_id": 999})
        sent = _data(await session.call_tool("approve", {"message_id": listed[0]["id"]}))
        again = await session.call_tool("approve", {"message_id": listed[0]["id"]})
        return {"started": started, "listed": listed, "bad": bad, "sent": sent, "again": again}

    out = anyio.run(_session_run, db_url, tmp_path, script)
    started = out["started"]
    assert (started["first_message_status"], started["drafts_pending"]) == ("draft", 1)
    assert started["approval"] == "all" and started["next_heartbeat_at"] is None
    (draft,) = out["listed"]
    assert (draft["instance_id"], draft["contact"]) == (started["id"], PHONE)
    assert _error(out["bad"])[1]["kind"] == "not_found"
    assert out["sent"]["status"] == "queued"
    text, error = _error(out["again"])
    assert error["kind"] == "refused" and "not a draft" in text
    kinds = [json.loads(line)["data"].get("action") for line in
             cli("events", "--json").stdout.splitlines() if '"draft"' in line]  # fmt: skip
    assert kinds == ["written", "approved"]

    # The CLI: a second conversation, rejected then approved with an edit.
    iid = cli("start", "+15551230002", "-o", "y", "--todo", "Day?", "--approval", "all",
              "--json").json()["id"]  # fmt: skip
    listed = cli("drafts", "--json", "--instance", iid)
    assert listed.exit_code == 0, listed
    (draft,) = listed.json()
    rejected = cli("reject", str(draft["id"]), "--reason", "too short", "--json")
    assert rejected.exit_code == 0 and rejected.json()["status"] == "rejected"
    assert cli("tick").exit_code == 0
    (second,) = cli("drafts", "--json").json()
    approved = cli("approve", str(second["id"]), "--text", "Hello! Which day?", "--json")
    assert approved.exit_code == 0, approved
    assert approved.json()["text"] == "Hello! Which day?"
    assert cli("drafts").stdout.strip() == "no drafts await approval"
    assert cli("reject", str(second["id"]), "--reason", "x").exit_code == 1
