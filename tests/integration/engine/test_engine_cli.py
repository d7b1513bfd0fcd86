"""The engine's commands through the real CLI (in-process Typer runner): start, tick,
demo, send, receive and contact, against SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cli_checks import ok

from relay.channels.base import ChannelError, PermanentChannelError
from relay.testing import PHONE, RecordingChannel

Cli = Callable[..., Any]
START = ("start", "+1 555 123 0001", "-o", "the delivery of order 1042", "-t", "Which day?")


def console_lines(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / ".relay" / "console.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


# -- start ----------------------------------------------------------------------------------


def test_start_runs_the_first_turn_and_prints_the_message(cli: Cli, tmp_path: Path) -> None:
    result = ok(cli(*START))
    first_line, sent = result.stdout.splitlines()
    iid, state = first_line.split()
    assert state == "WAITING_FOR_REPLY"
    assert sent.startswith("sent: Hello! I'm getting in touch about the delivery of order 1042.")
    assert sent.endswith("Which day?")
    (line,) = console_lines(tmp_path)
    assert (line["instance_id"], line["to"]) == (iid, PHONE)
    assert line["text"] == sent.removeprefix("sent: ")
    # The console channel echoes on stderr, so stdout stays clean for --json.
    assert "→ +15551230001" in result.stderr


def test_start_json_has_the_first_message(cli: Cli) -> None:
    data = ok(cli(*START, "--json")).json()
    assert data["state"] == "WAITING_FOR_REPLY"
    assert data["first_message"].endswith("Which day?")
    assert data["first_message_status"] == "sent"
    assert [(t["id"], t["text"], t["status"]) for t in data["todos"]] == [
        (1, "Which day?", "in_progress")
    ]
    history = ok(cli("history", data["id"], "--json")).json()
    assert [h["to_state"] for h in history] == ["CREATED", "ACTIVE", "WAITING_FOR_REPLY"]


def test_start_defer_leaves_it_for_tick(cli: Cli, tmp_path: Path) -> None:
    result = ok(cli(*START, "--defer"))
    iid, state = result.stdout.split()
    assert state == "CREATED" and console_lines(tmp_path) == []

    data = ok(cli("tick", "--json")).json()
    assert data.pop("schema_version") == 1
    assert data == {
        "resumed": 0,
        "heartbeats_fired": 0,
        "abandoned": 0,
        "deferred": 0,
        "inbound_polled": 0,
        "inbound_pushed": 0,
        "turns": [
            {
                "instance_id": iid,
                "reason": "first_message",
                "state": "WAITING_FOR_REPLY",
                "messages": [console_lines(tmp_path)[0]["text"]],
                "discarded": False,
                "note": None,
            }
        ],
        "delivered": 1,
        "retrying": 0,
        "failed": 0,
        "blocked": 0,
        "held": 0,
        "errors": [],
    }
    assert "Nothing due." in ok(cli("tick")).stdout


def test_tick_prints_what_it_did(cli: Cli) -> None:
    iid = ok(cli(*START, "--defer")).stdout.split()[0]
    out = ok(cli("tick")).stdout
    assert f"{iid} first_message → WAITING_FOR_REPLY" in out
    assert "sent: Hello!" in out
    assert "delivered" in out


def test_tick_reads_the_console_inbox(cli: Cli, tmp_path: Path) -> None:
    iid = ok(cli(*START)).stdout.split()[0]
    inbox = tmp_path / ".relay" / "console-inbox.jsonl"
    inbox.write_text(json.dumps({"from": "+15551230001", "text": "Thursday"}) + "\n")
    data = ok(cli("tick", "--json")).json()
    assert data["inbound_polled"] == 1
    assert [(t["instance_id"], t["state"]) for t in data["turns"]] == [(iid, "COMPLETED")]
    assert ok(cli("tick", "--json", "--no-poll")).json()["inbound_polled"] == 0


def test_start_with_an_agent_that_cannot_run_creates_nothing(cli: Cli) -> None:
    """The command agent has no command configured: start refuses before it writes
    anything (exit 2, one line), instead of leaving a conversation stuck."""
    result = cli(*START, "--agent", "command")
    assert result.exit_code == 2
    assert "agent.command.command is not set" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stdout == ""
    assert ok(cli("list", "--json")).json() == []


def test_start_outside_the_sending_window_holds_the_first_message(cli: Cli, tmp_path: Path) -> None:
    closed_day = (datetime.now(UTC) + timedelta(days=3)).strftime("%a").lower()
    result = ok(cli(*START, "--window", f"{closed_day} 09:00-09:01"))
    assert result.stdout.split() == [result.stdout.split()[0], "CREATED"]
    assert "first message held until" in result.stderr
    assert console_lines(tmp_path) == []


def test_start_for_an_opted_out_contact_is_refused(cli: Cli) -> None:
    ok(cli(*START))
    ok(cli("receive", PHONE, "STOP"))
    result = cli(*START)
    assert result.exit_code == 2
    assert "opted out" in result.stderr and result.stdout == ""
    assert len(ok(cli("list", "--json")).json()) == 1

    ok(cli("receive", PHONE, "start"))
    assert ok(cli(*START)).stdout.split()[1] == "WAITING_FOR_REPLY"


# -- send -----------------------------------------------------------------------------------


def test_send_delivers_at_once(cli: Cli, tmp_path: Path) -> None:
    iid = ok(cli(*START)).stdout.split()[0]
    result = ok(cli("send", iid, "A quick note from a person."))
    assert result.stdout.startswith(f"sent to {PHONE} (message ")
    data = ok(cli("send", iid, "And another.", "--json")).json()
    assert (data["status"], data["author"], data["attempts"]) == ("sent", "operator", 1)
    texts = [line["text"] for line in console_lines(tmp_path)]
    assert texts[1:] == ["A quick note from a person.", "And another."]


@pytest.fixture
def flaky(tmp_path: Path, test_channel: RecordingChannel) -> RecordingChannel:
    (tmp_path / "relay.toml").write_text('[channels.flaky]\ntype = "test"\n')
    return test_channel


def test_send_leaves_a_message_queued_when_the_channel_fails(
    cli: Cli, flaky: RecordingChannel
) -> None:
    iid = ok(cli(*START, "--channel", "flaky", "--defer")).stdout.split()[0]
    flaky.fail_always = ChannelError("connection reset")
    result = ok(cli("send", iid, "Hello from a person"))
    assert "queued for +15551230001" in result.stdout
    assert "will deliver it" in result.stdout
    (message,) = ok(cli("transcript", iid, "--json")).json()
    assert (message["status"], message["last_error"]) == ("queued", "connection reset")

    flaky.fail_always = None
    # Not before the backoff: the next tick leaves it and runs the first turn, whose
    # message waits behind the operator's (a conversation's messages keep their order).
    assert ok(cli("tick", "--json")).json()["delivered"] == 0
    assert [m.text for m in flaky.delivered.values()] == []


def test_send_says_so_when_the_message_failed_for_good(cli: Cli, flaky: RecordingChannel) -> None:
    iid = ok(cli(*START, "--channel", "flaky", "--defer")).stdout.split()[0]
    flaky.fail_always = PermanentChannelError("number is not reachable")
    result = ok(cli("send", iid, "Hello from a person"))
    assert "failed" in result.stdout and "number is not reachable" in result.stdout
    assert "will deliver it" not in result.stdout
    data = ok(cli("show", iid, "--json")).json()
    assert data["state"] == "NEEDS_HUMAN_INTERVENTION"


# -- demo -----------------------------------------------------------------------------------


def test_demo_ends_completed(run_cli: Cli, tmp_path: Path) -> None:
    result = run_cli("demo")
    assert result.exit_code == 0, str(result)
    assert "COMPLETED" in result.stdout
    assert "Thursday works for me." in result.stdout
    assert not (tmp_path / ".relay").exists()  # throw-away: nothing left behind


def test_demo_json(run_cli: Cli) -> None:
    result = run_cli("demo", "--json")
    assert result.exit_code == 0, str(result)
    data = result.json()
    assert data["instance"]["state"] == "COMPLETED"
    assert data["instance"]["end_reason"] == "completed"
    assert {t["status"] for t in data["instance"]["todos"]} == {"completed"}
    authors = [m["author"] for m in data["transcript"]]
    assert authors == ["agent", "contact"] * 4 + ["agent"]  # one answer refused, asked again
    assert data["result"]["answers"]["1"] is True and data["result"]["complete"] is True
    assert data["result"]["answers"]["3"] == "5550143"
    assert {m["status"] for m in data["transcript"]} == {"sent", "processed"}
    assert data["history"][0]["to_state"] == "CREATED"
    assert data["history"][-1]["to_state"] == "COMPLETED"


def test_demo_ignores_the_local_configuration(run_cli: Cli, tmp_path: Path) -> None:
    """A project's relay.toml (a closed sending window, a console file of its own, an
    agent that needs a server) must not change the throw-away demo."""
    closed_day = (datetime.now(UTC) + timedelta(days=3)).strftime("%a").lower()
    (tmp_path / "relay.toml").write_text(
        f'[defaults]\nwindow = "{closed_day} 09:00-09:01"\nmax_followups = 0\n'
        '[agent]\nbackend = "openai"\n'
        f'[channels.console]\nfile = "{tmp_path / "mine.jsonl"}"\n'
    )
    result = run_cli("demo", "--json")
    assert result.exit_code == 0, str(result)
    assert result.json()["instance"]["state"] == "COMPLETED"
    assert not (tmp_path / "mine.jsonl").exists()


# -- contact --------------------------------------------------------------------------------


def test_contact_commands(cli: Cli) -> None:
    assert cli("contact", "show", PHONE).exit_code == 2
    iid = ok(cli(*START)).stdout.split()[0]
    queued = ok(cli(*START, "--json")).json()["id"]

    shown = ok(cli("contact", "show", "(555) 123-0001", "--json")).json()
    assert (shown["contact"], shown["opted_out"]) == (PHONE, False)
    assert (shown["live_instance"], shown["queued"]) == (iid, [queued])
    assert shown["opted_out_at"] is None
    text = ok(cli("contact", "show", PHONE)).stdout
    assert iid in text and queued in text

    data = ok(cli("contact", "set", PHONE, "--tz", "Europe/Madrid", "--json")).json()
    assert data["timezone"] == "Europe/Madrid"
    bad = cli("contact", "set", PHONE, "--tz", "Mars/Olympus")
    assert bad.exit_code == 2 and "Mars/Olympus" in bad.stderr

    out = ok(cli("contact", "opt-out", PHONE, "--reason", "asked by phone", "--json")).json()
    assert out["opted_out"] and out["opted_out_at"] is not None
    assert (out["live_instance"], out["queued"]) == (None, [])
    assert ok(cli("show", iid, "--json")).json()["end_reason"] == "opted_out"
    assert ok(cli("show", queued, "--json")).json()["failure_reason"] == "opted_out"
    assert cli(*START).exit_code == 2

    assert ok(cli("contact", "opt-in", PHONE, "--json")).json()["opted_out_at"] is None
    assert ok(cli(*START)).stdout.split()[1] == "WAITING_FOR_REPLY"


def test_contact_show_lists_messages_with_no_conversation(cli: Cli) -> None:
    ok(cli("receive", "ada@example.com", "Who is this?"))
    shown = ok(cli("contact", "show", "ada@example.com", "--json")).json()
    assert [m["text"] for m in shown["unrouted"]] == ["Who is this?"]
    assert "Who is this?" in ok(cli("contact", "show", "ada@example.com")).stdout


def test_a_nul_character_in_an_inbound_message_does_not_break_the_tick(
    cli: Cli, tmp_path: Path
) -> None:
    """PostgreSQL text cannot hold NUL; a channel may still hand one over."""
    iid = ok(cli(*START)).stdout.split()[0]
    inbox = tmp_path / ".relay" / "console-inbox.jsonl"
    inbox.write_text(json.dumps({"from": "+15551230001", "text": "Thurs\u0000day"}) + "\n")
    data = ok(cli("tick", "--json")).json()
    assert (data["inbound_polled"], data["errors"]) == (1, [])
    transcript = ok(cli("transcript", iid, "--json")).json()
    assert transcript[1]["text"] == "Thursday"


def test_start_does_not_claim_a_message_was_sent_when_delivery_failed(
    cli: Cli, flaky: RecordingChannel
) -> None:
    flaky.fail_always = ChannelError("connection reset")
    result = ok(cli(*START, "--channel", "flaky"))
    state = result.stdout.splitlines()[0].split()[1]
    assert state == "WAITING_FOR_REPLY"
    assert "sent:" not in result.stdout
    assert "queued: Hello!" in result.stdout
    assert "connection reset" in result.stderr
    data = ok(cli(*START, "--channel", "flaky", "--json")).json()
    assert data["state"] == "QUEUED" and "first_message" not in data
