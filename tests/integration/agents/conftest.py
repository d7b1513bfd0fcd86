"""Fixtures for the agent backends: turn contexts (from agent_contexts, shared with the
unit tests), and a loopback chat-completions server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from agent_contexts import make_context

__all__ = ["make_context"]


@dataclass
class ChatServer:
    """A chat-completions endpoint on 127.0.0.1 that answers from a queue and records requests."""

    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    replies: list[tuple[int, bytes]] = field(default_factory=list)

    def reply(self, status: int, body: Any) -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.replies.append((status, raw))


def _handler(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            server.requests.append(
                {"path": self.path, "headers": dict(self.headers), "body": json.loads(raw)}
            )
            status, body = server.replies.pop(0) if server.replies else (500, b"{}")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def chat_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    state = ChatServer(url="")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture
def unused_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
