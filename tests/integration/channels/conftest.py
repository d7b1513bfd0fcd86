"""Fixtures for channel tests: real servers on loopback, so the wire format is what is tested."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from relay.channels.base import Outbound


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """The `.relay/` folder next to a relay.toml in tmp_path; not created, as on first use."""
    return tmp_path / ".relay"


@pytest.fixture
def outbound() -> Callable[..., Outbound]:
    def make(
        key: str = "msg-1-a1b2c3",
        to: str = "+15551230001",
        text: str = "Hello there",
        message_id: int = 1,
        instance_id: str | None = "r7k2",
    ) -> Outbound:
        return Outbound(message_id, instance_id, to, text, key)

    return make


@pytest.fixture
def closed_port() -> int:
    """A loopback port with nothing listening on it, for "connection refused"."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- HTTP ------------------------------------------------------------------------------------


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Reply:
    status: int = 200
    body: bytes | str | dict[str, Any] | None = None

    def encoded(self) -> tuple[bytes, str]:
        if isinstance(self.body, dict):
            return json.dumps(self.body).encode(), "application/json"
        if isinstance(self.body, str):
            return self.body.encode(), "text/plain"
        return self.body or b"", "text/plain"


@dataclass
class HttpEndpoint:
    """A scripted HTTP server: answers with queued replies, records every request."""

    base_url: str
    replies: list[Reply] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    #: While cleared, requests hang, so a client timeout can be tested without sleeping.
    gate: threading.Event = field(default_factory=threading.Event)

    def url(self, path: str = "/hook") -> str:
        return self.base_url + path

    def reply(self, status: int = 200, body: bytes | str | dict[str, Any] | None = None) -> None:
        self.replies.append(Reply(status, body))


def _handler_for(endpoint: HttpEndpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            endpoint.requests.append(
                Request(self.command, self.path, dict(self.headers.items()), body)
            )
            endpoint.gate.wait(timeout=10)
            reply = endpoint.replies.pop(0) if endpoint.replies else Reply(204)
            payload, content_type = reply.encoded()
            self.send_response(reply.status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = _handle

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


@pytest.fixture
def http_endpoint() -> Iterator[HttpEndpoint]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    server.daemon_threads = True
    endpoint = HttpEndpoint(f"http://127.0.0.1:{server.server_address[1]}")
    endpoint.gate.set()
    server.RequestHandlerClass = _handler_for(endpoint)
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield endpoint
    finally:
        endpoint.gate.set()
        server.shutdown()
        server.server_close()
        thread.join()


# --- SMTP ------------------------------------------------------------------------------------


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    content: bytes
    authenticated: bool


@dataclass
class SmtpServer:
    """A recording SMTP server; replies can be scripted per recipient or for DATA."""

    host: str
    port: int
    messages: list[Received] = field(default_factory=list)
    rcpt_replies: dict[str, str] = field(default_factory=dict)
    data_reply: str | None = None
    logins: dict[bytes, bytes] = field(default_factory=dict)

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, options: Any
    ) -> str:
        if address in self.rcpt_replies:
            return self.rcpt_replies[address]
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.data_reply:
            return self.data_reply
        received = Received(
            envelope.mail_from, list(envelope.rcpt_tos), envelope.content, session.authenticated
        )
        self.messages.append(received)
        return "250 Message accepted for delivery"

    def authenticate(
        self, server: Any, session: Any, envelope: Any, mechanism: str, data: Any
    ) -> Any:
        from aiosmtpd.smtp import AuthResult

        ok = self.logins.get(data.login) == data.password
        return AuthResult(success=ok, handled=False)


@pytest.fixture
def smtp_server() -> Iterator[SmtpServer]:
    pytest.importorskip("aiosmtpd", reason="pip install aiosmtpd (the test extras)")
    from aiosmtpd.controller import Controller

    state = SmtpServer("127.0.0.1", 0)

    class LoopbackController(Controller):
        """Binds port 0 and learns the port, so parallel test runs never collide."""

        def _create_server(self) -> Any:
            async def create() -> Any:
                server = await self.loop.create_server(
                    self._factory_invoker, host=self.hostname, port=0
                )
                self.port = server.sockets[0].getsockname()[1]
                return server

            return create()

    controller = LoopbackController(
        state,
        hostname="127.0.0.1",
        authenticator=state.authenticate,
        auth_require_tls=False,
    )
    controller.start()
    state.port = controller.port
    try:
        yield state
    finally:
        controller.stop()


# --- IMAP ------------------------------------------------------------------------------------


@pytest.fixture
def imap_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A real IMAP server (pymap, maildir on disk) on a loopback port; see imap_server.py."""
    pytest.importorskip("pymap", reason="pip install pymap (the test extras)")
    from imap_server import PASSWORD, ImapServer

    monkeypatch.setenv("RELAY_TEST_IMAP_PASSWORD", PASSWORD)
    server = ImapServer(tmp_path / "imap").start()
    try:
        yield server
    finally:
        server.stop()
