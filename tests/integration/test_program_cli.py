"""Driving relay from a program, through the real CLI on SQLite and PostgreSQL:
structured answers, `relay result`, `relay events`, `relay wait`, the audit log, --meta."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_checks import ok

Cli = Callable[..., Any]
PHONE = "+15551230001"


def start(cli: Cli, *extra: str) -> dict[str, Any]:
    args = ["start", PHONE, "--objective", "your delivery", *extra, "--json"]
    if "--todo" not in extra:
        args[4:4] = ["--todo", "Which day suits you?::date", "--todo", "Right address?::yesno"]
    return ok(cli(*args)).json()


def reply(cli: Cli, text: str) -> None:
    ok(cli("receive", PHONE, text))
    ok(cli("tick"))


def events(cli: Cli, *args: str) -> list[dict[str, Any]]:
    out = ok(cli("events", "--json", *args)).stdout
    return [json.loads(line) for line in out.splitlines()]


def test_answers_in_result_with_their_message_and_meta(cli: Cli) -> None:
    data = start(cli, "--meta", "order=1042", "--meta", "ticket=T-9")
    assert data["meta"] == {"order": "1042", "ticket": "T-9"}
    assert [(t["answer_kind"], t["required"]) for t in data["todos"]] == [
        ("date", True),
        ("yesno", True),
    ]
    reply(cli, "no idea yet")  # not a date: refused, the agent asks again
    transcript = ok(cli("transcript", data["id"], "--json")).json()
    assert transcript[-1]["text"].startswith("Sorry, I need a date")
    reply(cli, "2024-05-03 please")
    reply(cli, "Yes")
    result = ok(cli("result", data["id"], "--json")).json()
    assert result["schema_version"] == 1
    assert (result["state"], result["final"], result["complete"]) == ("COMPLETED", True, True)
    assert result["answers"] == {"1": "2024-05-03", "2": True}
    assert result["todos"][0]["message"]["text"] == "2024-05-03 please"
    assert result["meta"] == {"order": "1042", "ticket": "T-9"}
    plain = ok(cli("result", data["id"])).stdout
    assert "2024-05-03" in plain and "final" in plain
    listed = ok(cli("list", "--json", "--results")).json()
    assert listed[0]["result"]["answers"] == result["answers"]


def test_a_completion_without_required_answers_is_flagged(cli: Cli) -> None:
    data = start(cli, "--todo", "Anything to add?::text?", "--todo", "Which colour?")
    reply(cli, "nothing")
    reply(cli, "blue")
    assert ok(cli("show", data["id"], "--json")).json()["result_incomplete"] is False
    data = start(cli, "--todo", "Which day?::date")
    ok(cli("cancel", data["id"]))
    shown = ok(cli("show", data["id"], "--json")).json()
    assert shown["missing_answers"] == [1] and shown["result_incomplete"] is False


def test_a_bad_answer_kind_is_a_usage_error(cli: Cli) -> None:
    result = cli("start", PHONE, "-o", "x", "--todo", "Which day?::weekday")
    assert result.exit_code == 2 and "unknown answer kind 'weekday'" in result.stderr
    result = cli("start", PHONE, "-o", "x", "--todo", "Pick::choice(one)")
    assert result.exit_code == 2 and "at least two choices" in result.stderr
    assert cli("start", PHONE, "-o", "x", "--todo", "y", "--meta", "novalue").exit_code == 2


def test_events_have_stable_cursors_and_carry_meta(cli: Cli) -> None:
    first = start(cli, "--meta", "run=7")
    reply(cli, "2024-05-03")
    everything = events(cli)
    cursors = [int(e["cursor"]) for e in everything]
    assert cursors == sorted(cursors) and len(set(cursors)) == len(cursors)
    kinds = {e["kind"] for e in everything}
    assert {"state.changed", "command", "message.queued", "message.sent"} <= kinds
    assert {"message.received", "answer.recorded"} <= kinds
    assert all(e["meta"] == {"run": "7"} for e in everything if e["instance_id"] == first["id"])
    # Resuming from any cursor gives exactly the rest, nothing missed or repeated.
    middle = everything[len(everything) // 2]["cursor"]
    rest = events(cli, "--since", middle)
    assert rest == [e for e in everything if int(e["cursor"]) > int(middle)]
    assert events(cli, "--since", everything[-1]["cursor"]) == []
    second = start(cli, "--todo", "Other?")
    mine = events(cli, "--instance", second["id"])
    assert mine and {e["instance_id"] for e in mine} == {second["id"]}
    plain = ok(cli("events", "--since", everything[-1]["cursor"])).stdout
    assert "state.changed" in plain and second["id"] in plain
    assert cli("events", "--since", "abc").exit_code == 2


def test_operator_commands_are_audited_with_who_and_arguments(cli: Cli) -> None:
    data = start(cli)
    ok(cli("--actor", "ana", "pause", data["id"], "--reason", "holiday"))
    ok(cli("resume", data["id"], env={"RELAY_ACTOR": "ben"}))
    ok(cli("--actor", "ana", "send", data["id"], "A secret body"))
    ok(cli("--actor", "cy", "contact", "opt-out", PHONE, "--reason", "asked"))
    audited = [e for e in events(cli) if e["kind"] == "command"]
    commands = [(e["data"]["command"], e["actor"]) for e in audited]
    assert commands[1:] == [("pause", "ana"), ("resume", "ben"), ("send", "ana"), ("opt-out", "cy")]
    assert commands[0][0] == "start" and commands[0][1]  # the OS user
    assert audited[1]["data"]["args"] == {"reason": "holiday"}
    assert "A secret body" not in json.dumps(audited)
    assert audited[3]["data"]["args"]["length"] == len("A secret body")
    assert audited[4]["instance_id"] is None and audited[4]["data"]["args"]["contact"] == PHONE
    history = ok(cli("history", data["id"], "--commands", "--json")).json()
    assert [(h["kind"], h["event"]) for h in history if h["kind"] == "command"] == [
        ("command", "start"),
        ("command", "pause"),
        ("command", "resume"),
        ("command", "send"),
    ]
    plain = ok(cli("history", data["id"], "--commands")).stdout
    assert "$ pause" in plain and "reason=holiday" in plain
    assert "$ pause" not in ok(cli("history", data["id"])).stdout


def test_wait_exit_codes(cli: Cli) -> None:
    data = start(cli)
    timed_out = cli("wait", data["id"], "--timeout", "1s", "--json")
    assert timed_out.exit_code == 4, timed_out
    assert timed_out.json()["outcome"] == "timeout"
    assert cli("wait", data["id"], "--for", "reply", "--timeout", "1s").exit_code == 4
    before = events(cli)[-1]["cursor"]
    ok(cli("receive", PHONE, "help, I want a person"))
    got = cli("wait", data["id"], "--for", "reply", "--since", before, "--json")
    assert got.exit_code == 0 and got.json()["event"]["kind"] == "message.received"
    ok(cli("tick"))  # the scripted agent hands "a person" to a human
    needs = cli("wait", data["id"], "--json")
    assert needs.exit_code == 3 and needs.json()["outcome"] == "needs_human"
    assert cli("wait", data["id"], "--for", "needs-human").exit_code == 0
    ok(cli("cancel", data["id"]))
    done = cli("wait", data["id"], "--for", "done", "--json")
    assert done.exit_code == 0 and done.json()["instances"][0]["state"] == "FAILED"
    ended = cli("wait", data["id"], "--for", "answer")
    assert ended.exit_code == 5, ended
    assert cli("wait", "nosuchid").exit_code == 2
    assert cli("wait", data["id"], "--for", "lunch").exit_code == 2


def test_start_with_a_result_schema(cli: Cli, tmp_path: Path) -> None:
    schema = tmp_path / "result.schema.json"
    schema.write_text(json.dumps({"type": "object", "required": ["1"]}))
    data = start(cli, "--todo", "Which day?::date", "--schema", str(schema))
    ok(cli("cancel", data["id"]))
    result = ok(cli("result", data["id"], "--json")).json()
    assert result["schema_errors"] == ["(result): '1' is a required property"]
    assert result["complete"] is False
    schema.write_text("{nope")
    assert cli("start", PHONE, "-o", "x", "--todo", "y", "--schema", str(schema)).exit_code == 2


@pytest.mark.parametrize("command", ["result", "wait"])
def test_unknown_ids(cli: Cli, command: str) -> None:
    assert cli(command, "zzzzzzz").exit_code == 2
