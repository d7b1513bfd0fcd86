"""Test doubles of the engine's end-to-end tests that users would not need (a
channel that "dies" mid-send, a chat-completions server); the shared ones
(ScriptAgent, RecordingChannel, Harness) ship in :mod:`relay.testing`."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from relay.channels.base import Outbound


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
    #: As the console it wraps (:mod:`relay.channels.fate`).
    resend_safe: bool = True

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


def chat_server(monkeypatch: pytest.MonkeyPatch, key_env: str, key: str) -> Iterator[ChatServer]:
    """A chat-completions server on loopback for one test (no proxy in the way; the
    API key in ``key_env``), shut down after it: the body of a fixture."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(key_env, key)
    state = ChatServer()
    httpd = serve_chat(state)
    yield state
    httpd.shutdown()
    httpd.server_close()
