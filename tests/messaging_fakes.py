"""Loopback fakes of the provider APIs relay talks to: Twilio's Messages API and
Telegram's Bot API. They speak the documented wire format (paths, form/JSON
bodies, error payloads, headers), record every request, and can be scripted to
fail; the fake Twilio also sends signed status callbacks, as Twilio does.
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx

ACCOUNT = "AC" + "0" * 32
TOKEN = "twilio-test-auth-token"
BOT_TOKEN = "123456:telegram-test-token"


@dataclass
class Scripted:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class _Handler(BaseHTTPRequestHandler):
    fake: Any

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        status, payload, headers = self.fake.handle(self.command, self.path, self.headers, body)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        return


# -- Twilio ------------------------------------------------------------------------------------


@dataclass
class TwilioMessage:
    sid: str
    form: dict[str, str]
    created: datetime = field(default_factory=lambda: datetime.now(UTC))

    def listed(self) -> dict[str, Any]:
        """As the Messages list shows a message our number sent."""
        when = format_datetime(self.created.astimezone(UTC), usegmt=True)
        return {
            "sid": self.sid,
            "from": self.form.get("From"),
            "to": self.form.get("To"),
            "body": self.form.get("Body", ""),
            "direction": "outbound-api",
            "status": "sent",
            "date_created": when,
            "date_sent": when,
        }


@dataclass
class FakeTwilio:
    """``POST/GET /2010-04-01/Accounts/{sid}/Messages.json`` with basic auth (the
    list holds the inbound messages added and what was sent)."""

    base_url: str = ""
    sent: list[TwilioMessage] = field(default_factory=list)
    inbound: list[dict[str, Any]] = field(default_factory=list)
    errors: list[Scripted] = field(default_factory=list)
    list_requests: list[str] = field(default_factory=list)
    #: Statuses called back (signed) right after a create, e.g. ["sent", "delivered"].
    callbacks: list[str] = field(default_factory=list)
    callback_results: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: The time a created message is dated (a test on a fake clock sets it).
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    #: Scripted answers to the next list requests (GET), before any listing.
    list_errors: list[Scripted] = field(default_factory=list)
    #: Seconds a create takes to answer once Twilio has the message (a provider's
    #: latency: a client killed meanwhile never hears that it went).
    answer_delay: Callable[[], float] | None = None

    def fail_next(
        self, status: int, code: int, message: str = "", retry_after: str | None = None
    ) -> None:
        body = {
            "code": code,
            "message": message or f"error {code}",
            "status": status,
            "more_info": f"https://www.twilio.com/docs/errors/{code}",
        }
        headers = {"Retry-After": retry_after} if retry_after else {}
        self.errors.append(Scripted(status, body, headers))

    def handle(self, method: str, path: str, headers: Any, body: bytes) -> tuple[int, Any, dict]:
        expected = "Basic " + base64.b64encode(f"{ACCOUNT}:{TOKEN}".encode()).decode()
        if headers.get("Authorization") != expected:
            return 401, {"code": 20003, "message": "Authenticate", "status": 401}, {}
        parts = urlsplit(path)
        if parts.path != f"/2010-04-01/Accounts/{ACCOUNT}/Messages.json":
            return 404, {"code": 20404, "message": "not found", "status": 404}, {}
        if method == "GET":
            self.list_requests.append(path)
            if self.list_errors:
                scripted = self.list_errors.pop(0)
                return scripted.status, scripted.body, scripted.headers
            return 200, self._page(dict(parse_qsl(parts.query))), {}
        if self.errors:
            scripted = self.errors.pop(0)
            return scripted.status, scripted.body, scripted.headers
        form = dict(parse_qsl(body.decode()))
        message = TwilioMessage("SM" + secrets.token_hex(16), form, self.now())
        with self.lock:
            self.sent.append(message)
        if self.answer_delay is not None:
            time.sleep(self.answer_delay())
        if form.get("StatusCallback") and self.callbacks:
            threading.Thread(target=self._call_back, args=(message,), daemon=True).start()
        return 201, {"sid": message.sid, "status": "queued", "to": form.get("To")}, {}

    def _page(self, query: dict[str, str]) -> dict[str, Any]:
        """``GET Messages.json?To=...&From=...&DateSent>=YYYY-MM-DD``: what was sent
        to ``To`` (inbound, and what our number sent), newest first, filtered as
        Twilio filters (``DateSent>=`` by day)."""
        with self.lock:
            sent = [m.listed() for m in reversed(self.sent)]
        items = [m for m in sent + self.inbound if m["to"] == query.get("To")]
        if query.get("From"):
            items = [m for m in items if m["from"] == query["From"]]
        if query.get("DateSent>"):
            day = datetime.fromisoformat(query["DateSent>"]).date()
            items = [m for m in items if parsedate_to_datetime(m["date_sent"]).date() >= day]
        size = int(query.get("PageSize") or 50)
        page = int(query.get("Page") or 0)
        chunk = items[page * size : (page + 1) * size]
        more = (page + 1) * size < len(items)
        next_uri = (
            f"/2010-04-01/Accounts/{ACCOUNT}/Messages.json?To={query.get('To')}"
            f"&PageSize={size}&Page={page + 1}"
            if more
            else None
        )
        return {"messages": chunk, "next_page_uri": next_uri, "page": page}

    def add_inbound(self, sender: str, to: str, body: str, when: datetime) -> str:
        sid = "SM" + secrets.token_hex(16)
        self.inbound.insert(
            0,
            {  # newest first, as Twilio lists
                "sid": sid,
                "from": sender,
                "to": to,
                "body": body,
                "direction": "inbound",
                "date_sent": format_datetime(when.astimezone(UTC), usegmt=True),
            },
        )
        return sid

    def _call_back(self, message: TwilioMessage) -> None:
        for status in self.callbacks:
            self.callback(message, status)

    def callback(self, message: TwilioMessage, status: str, error_code: int | None = None) -> int:
        """POST a status callback to the message's StatusCallback, signed with the SDK."""
        params = {
            "MessageSid": message.sid,
            "MessageStatus": status,
            "AccountSid": ACCOUNT,
            "To": message.form.get("To", ""),
            "From": message.form.get("From", ""),
        }
        if error_code:
            params["ErrorCode"] = str(error_code)
        code = post_signed(message.form["StatusCallback"], params).status_code
        with self.lock:
            self.callback_results.append(code)
        return code


def sign(url: str, params: dict[str, str], token: str = TOKEN) -> str:
    from twilio.request_validator import RequestValidator

    return RequestValidator(token).compute_signature(url, params)


def post_signed(
    url: str, params: dict[str, str], *, signature: str | None = None, token: str = TOKEN
) -> httpx.Response:
    """POST form ``params`` to ``url`` as Twilio does (``signature=""``: unsigned)."""
    sig = sign(url, params, token) if signature is None else signature
    headers = {"X-Twilio-Signature": sig} if sig else {}
    return httpx.post(url, data=params, headers=headers, timeout=10)


@contextmanager
def fake_twilio() -> Iterator[FakeTwilio]:
    fake = FakeTwilio()
    handler = type("TwilioHandler", (_Handler,), {"fake": fake})
    with serving(handler) as url:
        fake.base_url = url
        yield fake


# -- Telegram ----------------------------------------------------------------------------------


@dataclass
class FakeTelegram:
    """``POST /bot<token>/getUpdates`` and ``/sendMessage``."""

    base_url: str = ""
    updates: list[dict[str, Any]] = field(default_factory=list)
    sent: list[dict[str, Any]] = field(default_factory=list)
    offsets: list[int | None] = field(default_factory=list)
    errors: list[Scripted] = field(default_factory=list)
    next_update: int = 1000

    def fail_next(self, code: int, description: str, retry_after: int | None = None) -> None:
        body: dict[str, Any] = {"ok": False, "error_code": code, "description": description}
        if retry_after is not None:
            body["parameters"] = {"retry_after": retry_after}
        self.errors.append(Scripted(code, body))

    def add_message(self, chat: int, text: str) -> int:
        self.next_update += 1
        self.updates.append(
            {
                "update_id": self.next_update,
                "message": {
                    "message_id": self.next_update,
                    "date": 1_700_000_000,
                    "chat": {"id": chat, "type": "private"},
                    "text": text,
                },
            }
        )
        return self.next_update

    def handle(self, method: str, path: str, headers: Any, body: bytes) -> tuple[int, Any, dict]:
        prefix = f"/bot{BOT_TOKEN}/"
        if not path.startswith(prefix):
            return 401, {"ok": False, "error_code": 401, "description": "Unauthorized"}, {}
        if self.errors:
            scripted = self.errors.pop(0)
            return scripted.status, scripted.body, {}
        call = path[len(prefix) :]
        data = json.loads(body or b"{}")
        if call == "getUpdates":
            offset = data.get("offset")
            self.offsets.append(offset)
            if offset is not None:  # confirmed: Telegram forgets the earlier ones
                self.updates = [u for u in self.updates if u["update_id"] >= offset]
            return 200, {"ok": True, "result": list(self.updates)}, {}
        if call == "sendMessage":
            self.sent.append(data)
            return (
                200,
                {
                    "ok": True,
                    "result": {"message_id": len(self.sent), "chat": {"id": data["chat_id"]}},
                },
                {},
            )
        return 404, {"ok": False, "error_code": 404, "description": "Not Found"}, {}


@contextmanager
def fake_telegram() -> Iterator[FakeTelegram]:
    fake = FakeTelegram()
    handler = type("TelegramHandler", (_Handler,), {"fake": fake})
    with serving(handler) as url:
        fake.base_url = url
        yield fake
