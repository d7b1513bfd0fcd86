"""What the handlers of ``relay serve`` share: the endpoint over one relay, the
refusal that answers a request without storing it, and the small HTTP helpers.

Apart from :mod:`relay.runner.serve` (the app and its server), which imports the
routes: the routes import this, never the app.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qsl
from xml.sax.saxutils import escape

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from relay.channels import pushed
from relay.channels.base import Inbound, Incoming
from relay.core.errors import RelayError
from relay.engine.runtime import Channels, Runtime, channel_kind
from relay.engine.verbs import incoming as incoming_verbs
from relay.runner.serve_writer import PushWriter

MAX_BODY = 64 * 1024
EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>'
TWILIO_KINDS = frozenset({"sms", "whatsapp"})


class Refused(Exception):
    """The request is answered with ``status`` and a short ``reason``; never stored."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class Endpoint:
    """The handlers, over one one relay's runtime: what a request brings is stored by
    the one :class:`PushWriter` and taken into the transcript by the daemon."""

    def __init__(self, relay: Runtime, max_body: int = MAX_BODY) -> None:
        self.relay = relay
        self.max_body = max_body
        self.channels = Channels(relay)
        self.writer = PushWriter(relay.store)

    # -- helpers ------------------------------------------------------------------

    async def body(self, request: Request) -> bytes:
        """The body, refused past ``max_body`` whether or not Content-Length says so."""
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > self.max_body:
            raise Refused(413, f"body over {self.max_body} bytes")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body:
                raise Refused(413, f"body over {self.max_body} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    def channel(self, name: str, kinds: frozenset[str]) -> Any:
        """The configured channel ``name`` if its type is one of ``kinds``, else 404."""
        kind = channel_kind(self.relay.config, name)
        if kind not in kinds:
            raise Refused(404, f"no {'/'.join(sorted(kinds))} channel named {name!r}")
        try:
            return self.channels.get(name)
        except RelayError as exc:
            raise Refused(500, f"channel {name}: {exc.message}") from None

    async def push(self, name: str, incoming: Incoming) -> None:
        """Store what arrived for the daemon (:mod:`relay.runner.serve_writer`);
        returns once it is committed. An opt-out is not left waiting for a daemon:
        it is ingested at once (:meth:`ingest`), so that its answer means nothing
        more will leave for that contact."""
        if incoming_verbs.opts_out(self.relay, incoming):
            await self.ingest(name, incoming)
            return
        now = time.time()
        messages = [with_content_id(item, now) for item in incoming.messages]
        text = pushed.dumps(replace(incoming, messages=messages))
        await self.writer.store_push(name, text, self.relay.now())

    async def ingest(self, name: str, incoming: Incoming) -> None:
        """Store and apply what arrived at once, in a worker thread (an opt-out,
        answered only once the contact is opted out and the sends under way have
        settled: ``incoming.ingest``)."""
        messages = [with_content_id(item, time.time()) for item in incoming.messages]
        await run_in_threadpool(
            incoming_verbs.ingest, self.relay, name, replace(incoming, messages=messages)
        )


#: A pushed message without a provider id is recognised again within this window.
DEDUPE_WINDOW = 600


def with_content_id(item: Inbound, now: float) -> Inbound:
    """``item``, given an id made of its sender, text and arrival window when the
    provider sent none: a provider retrying the request stores it once. (Two equal
    messages from one sender within the window are stored once too.)"""
    if item.provider_message_id:
        return item
    window = int(now // DEDUPE_WINDOW)
    digest = hashlib.sha256(f"{item.sender}\n{item.text}\n{window}".encode()).hexdigest()
    return replace(item, provider_message_id=f"content:{digest[:32]}")


def twiml(message: str | None = None) -> Response:
    body = (
        EMPTY_TWIML
        if message is None
        else '<?xml version="1.0" encoding="UTF-8"?>'
        f"<Response><Message>{escape(message)}</Message></Response>"
    )
    return Response(body, media_type="application/xml")


def form_pairs(body: bytes) -> list[tuple[str, str]]:
    try:
        return parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
    except UnicodeDecodeError:
        raise Refused(400, "body is not UTF-8 form data") from None


def now_seconds() -> float:
    return time.time()
