"""The `command` and `openai` agent backends driving real conversations through the
engine: a real subprocess, and a real HTTP server on loopback."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from engine_support import ChatServer, chat_server

import relay
from relay.core.turns import ACTION_NAMES
from relay.testing import PHONE, Harness

ECHO_AGENT = Path(relay.__file__).resolve().parents[1] / "examples" / "echo_agent.py"
KEY = "sk-loopback-0123456789"


# -- command ----------------------------------------------------------------------------------


def command_engine(make_engine: Any, *argv: str, timeout: Any = "10s", **extra: Any) -> Harness:
    return make_engine(
        **{
            "agent.backend": "command",
            "agent.command.command": [sys.executable, *argv],
            "agent.timeout": timeout,
            **extra,
        }
    )


def script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def test_the_example_command_agent_holds_a_conversation(make_engine: Any) -> None:
    assert ECHO_AGENT.is_file()
    engine = command_engine(make_engine, str(ECHO_AGENT))
    iid = engine.start(objective="your parcel")
    engine.tick()
    engine.relay.receive(PHONE, "Is it coming today?")
    engine.tick()
    engine.relay.receive(PHONE, "bye")
    engine.tick()
    view = engine.view(iid)
    assert (view.state, view.end_reason) == ("COMPLETED", "completed")
    assert [line["text"] for line in engine.console_lines()] == [
        "Hello! I'm here about: your parcel. Reply and I'll echo you.",
        "You said: Is it coming today?",
        "Goodbye!",
    ]


def test_a_command_agent_gets_no_secrets_and_no_database(
    make_engine: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("AGENT_HINT", "passed on purpose")
    spy = script(
        tmp_path,
        "spy.py",
        """
        import json, os, sys
        turn = json.load(sys.stdin)
        seen = sorted(k for k in os.environ if k in ("OPENAI_API_KEY", "AGENT_HINT")
                      or k.startswith("RELAY_DATABASE"))
        here = sorted(os.listdir("."))
        text = f"env={seen} cwd={here} schema={turn['schema']} todos={len(turn['todos'])}"
        json.dump({"actions": [{"name": "send_message", "args": {"text": text}}]}, sys.stdout)
        """,
    )
    engine = command_engine(make_engine, spy, **{"agent.command.pass_env": ["AGENT_HINT"]})
    engine.start()
    engine.tick()
    (line,) = engine.console_lines()
    assert line["text"] == "env=['AGENT_HINT'] cwd=[] schema=relay.turn/1 todos=2"


BROKEN = {
    "bad-json": (
        """
        import sys
        sys.stdin.read()
        print("Sure! Here are my actions: send_message")
        print("warning: model returned prose", file=sys.stderr)
        """,
        ["printed invalid JSON", "Sure! Here are my actions", "model returned prose"],
    ),
    "exit-status": (
        """
        import sys
        sys.stdin.read()
        sys.stderr.write("Traceback (most recent call last):\\nKeyError: 'objective'\\n")
        sys.exit(3)
        """,
        ["exited with status 3", "KeyError: 'objective'"],
    ),
    "timeout": (
        """
        import sys, time
        sys.stdin.read()
        print("thinking...", file=sys.stderr, flush=True)
        time.sleep(60)
        """,
        ["timed out after 0.5s", "thinking..."],
    ),
}


@pytest.mark.parametrize("kind", list(BROKEN), ids=list(BROKEN))
def test_a_failing_command_agent_goes_to_a_person_with_its_stderr(
    make_engine: Any, tmp_path: Path, kind: str
) -> None:
    body, expected = BROKEN[kind]
    engine = command_engine(make_engine, script(tmp_path, "agent.py", body), timeout=0.5)
    iid = engine.start()
    report = engine.tick()
    assert report.turns[0].state == "NEEDS_HUMAN_INTERVENTION"
    reason = engine.relay.history(iid)[-1].reason
    for fragment in expected:
        assert fragment in reason
    assert engine.outbound(iid) == [] and engine.console_lines() == []


# -- openai -----------------------------------------------------------------------------------


@pytest.fixture
def chat(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    yield from chat_server(monkeypatch, "RELAY_TEST_OPENAI_KEY", KEY)


@pytest.fixture
def openai_engine(make_engine: Any, chat: ChatServer) -> Harness:
    return make_engine(
        **{
            "agent.backend": "openai",
            "agent.openai.base_url": chat.url,
            "agent.openai.model": "test-model",
            "agent.openai.api_key_env": "RELAY_TEST_OPENAI_KEY",
            "agent.timeout": "10s",
        }
    )


def test_the_openai_agent_holds_a_conversation_through_tool_calls(
    openai_engine: Harness, chat: ChatServer
) -> None:
    engine = openai_engine
    chat.tools(
        ("mark_todo_item", {"todo_id": 1, "status": "in_progress"}),
        ("send_message", {"text": "Hello! Which day suits you?"}),
        ("set_state", {"key": "contact:language", "value": "en"}),
    )
    iid = engine.start()
    engine.tick()
    assert engine.todos(iid) == ["in_progress", "pending"]

    chat.tools(
        ("mark_todo_item", {"todo_id": 1, "status": "completed"}),
        ("mark_todo_item", {"todo_id": 2, "status": "skipped"}),
        ("send_message", {"text": "Friday it is. Thank you!"}),
        ("end_conversation", {"reason": "completed"}),
    )
    engine.relay.receive(PHONE, "Friday, please")
    engine.tick()
    view = engine.view(iid)
    assert (view.state, view.end_reason) == ("COMPLETED", "completed")
    assert engine.todos(iid) == ["completed", "skipped"]
    assert [line["text"] for line in engine.console_lines()] == [
        "Hello! Which day suits you?",
        "Friday it is. Thank you!",
    ]

    first, second = chat.requests
    assert first["path"] == "/v1/chat/completions"
    assert first["headers"]["Authorization"] == f"Bearer {KEY}"
    assert first["body"]["model"] == "test-model"
    assert {t["function"]["name"] for t in first["body"]["tools"]} >= set(ACTION_NAMES)
    messages = second["body"]["messages"]
    assert messages[0]["role"] == "system"
    assert "contact:language" in messages[0]["content"]
    assert messages[1:] == [
        {"role": "assistant", "content": "Hello! Which day suits you?"},
        {"role": "user", "content": "[new] Friday, please"},
    ]


def test_a_server_error_is_retried_once(openai_engine: Harness, chat: ChatServer) -> None:
    chat.reply(500, {"error": {"message": "overloaded"}})
    chat.tools(("send_message", {"text": "Hello!"}))
    iid = openai_engine.start()
    openai_engine.tick()
    assert len(chat.requests) == 2
    assert openai_engine.state(iid) == "WAITING_FOR_REPLY"
    assert [line["text"] for line in openai_engine.console_lines()] == ["Hello!"]


def test_two_server_errors_go_to_a_person(openai_engine: Harness, chat: ChatServer) -> None:
    chat.reply(502, {"error": {"message": "bad gateway"}})
    chat.reply(503, {"error": {"message": "overloaded"}})
    iid = openai_engine.start()
    openai_engine.tick()
    assert len(chat.requests) == 2
    assert openai_engine.state(iid) == "NEEDS_HUMAN_INTERVENTION"
    reason = openai_engine.relay.history(iid)[-1].reason
    assert "HTTP 503" in reason and "overloaded" in reason and "retry" in reason


@pytest.mark.parametrize(
    ("status", "expected"),
    [(401, "authentication failed (HTTP 401)"), (429, "rate limited (HTTP 429)")],
    ids=["401", "429"],
)
def test_auth_and_rate_limit_errors_go_to_a_person_without_a_retry(
    openai_engine: Harness, chat: ChatServer, status: int, expected: str
) -> None:
    chat.reply(status, {"error": {"message": f"no: key {KEY} refused"}})
    iid = openai_engine.start()
    openai_engine.tick()
    assert len(chat.requests) == 1
    assert openai_engine.state(iid) == "NEEDS_HUMAN_INTERVENTION"
    reason = openai_engine.relay.history(iid)[-1].reason
    assert expected in reason
    assert KEY not in reason
    assert openai_engine.outbound(iid) == []


def test_invalid_tool_arguments_go_to_a_person(openai_engine: Harness, chat: ChatServer) -> None:
    chat.tools(
        ("send_message", {"text": "Hello!"}),
        ("mark_todo_item", {"todo_id": 7, "status": "completed"}),
    )
    iid = openai_engine.start()
    openai_engine.tick()
    assert openai_engine.state(iid) == "NEEDS_HUMAN_INTERVENTION"
    assert "unknown todo id 7" in openai_engine.relay.history(iid)[-1].reason
    assert openai_engine.outbound(iid) == []
