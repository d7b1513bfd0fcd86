"""Test doubles and helpers for the engine's end-to-end tests (imported by the tests
and by ``conftest.py``; test doubles enter relay only through its public registries)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select

from relay.agents.base import AgentError, TransientAgentError
from relay.channels.base import ChannelError, Outbound
from relay.core.turns import Action, TurnContext
from relay.engine.pulse import Pulse, PulseReport
from relay.engine.service import Relay
from relay.store.models import Instance, Message

PHONE = "+15551230001"
OTHER = "+15551230002"

Turn = list[Action] | BaseException | Callable[[TurnContext], list[Action]]


# -- agents ---------------------------------------------------------------------------------


@dataclass
class ScriptAgent:
    """An in-process agent that answers each turn from a queue and records contexts.

    A queued item is a list of actions, an exception to raise, or a function
    of the context. With nothing queued it waits for a reply (no actions).
    ``gate``/``entered`` let a test hold the agent mid-turn from another thread.
    """

    turns: list[Turn] = field(default_factory=list)
    contexts: list[TurnContext] = field(default_factory=list)
    gate: threading.Event | None = None
    entered: threading.Event = field(default_factory=threading.Event)
    name: str = "script"

    def then(self, *items: Turn) -> ScriptAgent:
        self.turns.extend(items)
        return self

    def run(self, context: TurnContext) -> list[Action]:
        self.contexts.append(context)
        self.entered.set()
        if self.gate is not None and not self.gate.wait(timeout=20):
            raise AssertionError("the test never opened the agent's gate")
        if not self.turns:
            return []
        item = self.turns.pop(0)
        if isinstance(item, BaseException):
            raise item
        if callable(item):
            return item(context)
        return list(item)


def transient(message: str = "server error (HTTP 503)") -> AgentError:
    return TransientAgentError(message)


# -- channels ---------------------------------------------------------------------------------


@dataclass
class TestChannel:
    """A channel that fails as told, records deliveries, and dedupes by idempotency key."""

    __test__ = False

    failures: list[ChannelError] = field(default_factory=list)
    fail_always: ChannelError | None = None
    attempts: list[Outbound] = field(default_factory=list)
    delivered: dict[str, Outbound] = field(default_factory=dict)
    before_send: Callable[[Outbound], None] | None = None
    name: str = "test"

    def send(self, message: Outbound) -> str:
        self.attempts.append(message)
        if self.before_send is not None:
            self.before_send(message)
        if self.fail_always is not None:
            raise self.fail_always
        if self.failures:
            raise self.failures.pop(0)
        self.delivered.setdefault(message.idempotency_key, message)
        return f"test-{message.idempotency_key[:8]}"

    def poll(self, cursor: str | None) -> Any:
        from relay.channels.base import Incoming

        return Incoming()


# -- the engine ---------------------------------------------------------------------------------


@dataclass
class Engine:
    """A Relay plus the helpers the flows need; every read goes to the store."""

    relay: Relay
    clock: Any
    data_dir: Path

    def start(self, contact: str = PHONE, todos: list[str] | None = None, **kw: Any) -> str:
        objective = kw.pop("objective", "the delivery of order 1042")
        todos = (
            ["Which day suits you?", "What number can the driver call?"] if todos is None else todos
        )
        return self.relay.start(contact, objective, todos, **kw).id

    def tick(self, owner: str = "test") -> PulseReport:
        return Pulse(self.relay, owner).run()

    def state(self, instance_id: str) -> str:
        return self.relay.get(instance_id).state

    def view(self, instance_id: str) -> Any:
        return self.relay.get(instance_id)

    def transcript(self, instance_id: str) -> list[tuple[str, str, str]]:
        return [(m.author, m.status, m.text) for m in self.relay.transcript(instance_id)]

    def outbound(self, instance_id: str) -> list[Any]:
        return [m for m in self.relay.transcript(instance_id) if m.direction == "outbound"]

    def history(self, instance_id: str) -> list[tuple[str | None, str, str]]:
        return [(h.from_state, h.to_state, h.event) for h in self.relay.history(instance_id)]

    def states(self, instance_id: str) -> list[str]:
        return [h.to_state for h in self.relay.history(instance_id)]

    def todos(self, instance_id: str) -> list[str]:
        return [t.status for t in self.relay.get(instance_id).todos]

    def console_lines(self) -> list[dict[str, Any]]:
        path = self.data_dir / "console.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def row(self, instance_id: str) -> Instance:
        with self.relay.store.transaction() as session:
            found = session.scalar(select(Instance).where(Instance.id == instance_id))
            assert found is not None
            return found

    def message(self, message_id: int) -> Message:
        with self.relay.store.transaction() as session:
            found = session.get(Message, message_id)
            assert found is not None
            return found


class ProcessDied(BaseException):
    """Stands in for the process being killed: no ``except Exception`` catches it."""


@dataclass
class DyingConsole:
    """The real console channel, but the process "dies" right after a send returns,
    before the dispatcher can record it, while ``deaths`` (shared by every channel
    built, as by every restarted process) is above zero."""

    inner: Any
    deaths: list[int]
    name: str = "console"

    def send(self, message: Outbound) -> str:
        provider_id = self.inner.send(message)
        if self.deaths[0] > 0:
            self.deaths[0] -= 1
            raise ProcessDied(provider_id)
        return provider_id

    def poll(self, cursor: str | None) -> Any:
        return self.inner.poll(cursor)


# -- a chat-completions server on loopback ------------------------------------------------------


@dataclass
class ChatServer:
    """Speaks OpenAI's chat-completions protocol on 127.0.0.1: answers from a queue
    (status, body) and records every request (headers and JSON body)."""

    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    replies: list[tuple[int, Any]] = field(default_factory=list)

    def reply(self, status: int, body: Any) -> None:
        self.replies.append((status, body))

    def tools(self, *calls: tuple[str, dict[str, Any]]) -> None:
        """Queue a 200 answer whose message holds these tool calls."""
        tool_calls = [
            {
                "id": f"call_{n}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for n, (name, args) in enumerate(calls)
        ]
        message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
        self.reply(200, {"id": "chatcmpl-1", "choices": [{"index": 0, "message": message}]})


def serve_chat(state: ChatServer) -> Any:
    """Start the server in a thread; returns the ThreadingHTTPServer (call shutdown())."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            state.requests.append(
                {"path": self.path, "headers": dict(self.headers), "body": json.loads(raw)}
            )
            status, body = state.replies.pop(0) if state.replies else (500, {"error": "empty"})
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            return

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True).start()
    return httpd
