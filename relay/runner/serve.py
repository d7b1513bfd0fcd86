"""``relay serve``: the inbound HTTP endpoint (Starlette; run on uvicorn by
:func:`relay.runner.foreground.serve`).

It only stores what arrives: each request is verified, parsed into an
:class:`Incoming` and stored as a row of ``pushes``, then answered; the daemon
does the work (the ingest, agent turns, deliveries). A request
that fails verification is refused with 403 and logged without its body, so a
forged request stores nothing and leaks nothing into the log.

Routes (providers' consoles and scripts rely on these paths):

========================================  ==========================================
``POST /twilio/<channel>/inbound``         Twilio inbound SMS/WhatsApp (X-Twilio-Signature)
``POST /twilio/<channel>/status``          Twilio status callbacks (X-Twilio-Signature)
``POST /webhook/<channel>/inbound``        generic JSON webhook (X-Relay-Timestamp/-Signature)
``POST /telegram/<channel>/webhook``       Telegram updates (secret token header)
``POST /unsubscribe/<token>``              RFC 8058 one-click unsubscribe
``GET  /healthz``                          store reachable and schema at head
``GET  /metrics``                          Prometheus metrics (``[metrics]``)
``/ui/...``                                the web console (``[console]``, docs/console.md)
========================================  ==========================================

The routes' handlers (:class:`Handlers`) share an endpoint over one relay
(:class:`Endpoint`) and the refusal that answers a request without storing it
(:class:`Refused`); the app (:func:`build_app`) maps a store outage to 503.

What a verified request brings is stored by the app's one writer
(:func:`relay.store.push_writer.push_writer`: group-committed, the request
answered only once its row is committed) and taken into the transcript by the
daemon.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl
from xml.sax.saxutils import escape

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from relay.channels import telegram, twilio, twilio_signature, webhook
from relay.channels.base import Inbound, Incoming
from relay.core.errors import RelayError
from relay.core.values import InboundKind
from relay.engine.contacts.unsubscribe import ONE_CLICK
from relay.engine.runtime import Channels, Runtime, channel_kind
from relay.engine.verbs import incoming as incoming_verbs
from relay.store.push_writer import StorePush, push_writer

log = logging.getLogger("relay.serve")

#: Seconds a provider is asked to wait (``Retry-After``) while the store is away.
RETRY_AFTER = 5
MAX_BODY = 64 * 1024


# -- the routes: one handler each, over one endpoint --------------------------------------

EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>'
TWILIO_KINDS = frozenset({"sms", "whatsapp"})


class Refused(Exception):
    """The request is answered with ``status`` and a short ``reason``; never stored."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class Endpoint:
    """The handlers, over one relay's runtime: what a request brings is stored by
    ``store_push`` (the app's one writer, :mod:`relay.store.push_writer`)
    and taken into the transcript by the daemon."""

    def __init__(self, relay: Runtime, store_push: StorePush, max_body: int = MAX_BODY) -> None:
        self.relay = relay
        self.store_push = store_push
        self.max_body = max_body
        self.channels = Channels(relay)
        #: The opt-out words, read from the configuration once.
        self.words = incoming_verbs.keywords(relay)

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
        """Store what arrived for the daemon (``store_push``);
        returns once it is committed. An opt-out is not left waiting for a daemon:
        it is ingested at once (:meth:`ingest`), so that its answer means nothing
        more will leave for that contact."""
        if incoming_verbs.opts_out(self.relay, incoming, self.words):
            await self.ingest(name, incoming)
            return
        now = time.time()
        messages = [with_content_id(item, now) for item in incoming.messages]
        text = replace(incoming, messages=messages).dumps()
        await self.store_push(name, text, self.relay.now())

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


CONFIRM_PAGE = """<!doctype html><meta charset="utf-8"><title>Unsubscribe</title>
<form method="post"><p>Stop receiving these messages?</p>
<button name="List-Unsubscribe" value="One-Click">Unsubscribe</button></form>"""


class Handlers:
    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.relay = endpoint.relay

    async def healthz(self, request: Request) -> Response:
        """200 when the store answers and its schema is this code's; 503 otherwise
        (a load balancer or systemd watchdog can act on it)."""
        from relay.store.database import HEAD_REVISION

        try:
            revision = await run_in_threadpool(self.relay.store.revision)
        except Exception as exc:
            log.error("healthz: store unreachable: %s", exc)
            return JSONResponse({"ok": False, "error": "store unreachable"}, status_code=503)
        ok = revision == HEAD_REVISION
        body = {"ok": ok, "revision": revision, "head": HEAD_REVISION}
        return JSONResponse(body, status_code=200 if ok else 503)

    # -- Twilio ---------------------------------------------------------------------

    async def _twilio_form(self, request: Request) -> tuple[str, list[tuple[str, str]], bytes]:
        name = request.path_params["channel"]
        channel = self.endpoint.channel(name, TWILIO_KINDS)
        body = await self.endpoint.body(request)
        pairs = form_pairs(body)
        if not channel.public_url:
            raise Refused(403, f"channel {name} has no public_url to check signatures against")
        token = os.environ.get(channel.token_env)
        if not token:
            raise Refused(503, f"channel {name}: {channel.token_env} is not set")
        url = channel.public_url + request.url.path
        if request.url.query:
            url += "?" + request.url.query
        signature = request.headers.get(twilio_signature.SIGNATURE_HEADER)
        settings = request.headers.get(twilio_signature.SETTINGS_HEADER)
        if not twilio_signature.verify(token, url, pairs, signature, settings):
            raise Refused(403, "missing or wrong X-Twilio-Signature")
        return name, pairs, body

    async def twilio_inbound(self, request: Request) -> Response:
        """A reply by SMS/WhatsApp. HELP is answered here with the channel's
        ``help_text`` (as TwiML) and not stored: it is not a reply to the agent."""
        name, pairs, body = await self._twilio_form(request)
        form = dict(pairs)
        if twilio.keyword_of(form.get("Body") or "") in twilio.HELP_KEYWORDS:
            log.info("HELP on channel %s answered with the help text", name)
            return twiml(getattr(self.endpoint.channels.get(name), "help_text", ""))
        inbound = twilio.parse_inbound(form, raw=body.decode("utf-8", "replace"))
        if not inbound.sender:
            raise Refused(400, "no From")
        await self.endpoint.push(name, Incoming(messages=[inbound]))
        return twiml()

    async def twilio_status(self, request: Request) -> Response:
        name, pairs, _ = await self._twilio_form(request)
        receipt = twilio.parse_status(dict(pairs))
        if receipt is not None:
            await self.endpoint.push(name, Incoming(receipts=[receipt]))
        return twiml()

    # -- the generic webhook -----------------------------------------------------------

    async def webhook_inbound(self, request: Request) -> Response:
        name = request.path_params["channel"]
        channel = self.endpoint.channel(name, frozenset({"webhook"}))
        body = await self.endpoint.body(request)
        secret = os.environ.get(channel.secret_env or "") if channel.secret_env else None
        if not secret:
            raise Refused(403, f"channel {name} has no secret_env set: inbound is refused")
        why = webhook.verify_inbound(
            secret,
            request.headers.get(webhook.TIMESTAMP_HEADER),
            request.headers.get(webhook.SIGNATURE_HEADER),
            body,
            now_seconds(),
        )
        if why:
            raise Refused(403, why)
        try:
            inbound = webhook.parse_inbound_json(body)
        except ValueError as exc:
            raise Refused(400, str(exc)) from None
        await self.endpoint.push(name, Incoming(messages=[inbound]))
        return JSONResponse({"ok": True})

    # -- Telegram ------------------------------------------------------------------------

    async def telegram_webhook(self, request: Request) -> Response:
        """Updates pushed by Telegram (``setWebhook`` with ``secret_token``)."""
        name = request.path_params["channel"]
        channel = self.endpoint.channel(name, frozenset({"telegram"}))
        body = await self.endpoint.body(request)
        secret = os.environ.get(channel.webhook_secret_env or "") or None
        given = request.headers.get(telegram.SECRET_HEADER) or ""
        if not secret or not hmac.compare_digest(secret.encode(), given.encode()):
            raise Refused(403, f"missing or wrong {telegram.SECRET_HEADER}")
        import json

        try:
            inbound = telegram.parse_update(json.loads(body))
        except (ValueError, AttributeError, TypeError) as exc:
            raise Refused(400, f"not a Telegram update ({exc})") from None
        if inbound is not None:
            await self.endpoint.push(name, Incoming(messages=[inbound]))
        return JSONResponse({"ok": True})

    # -- one-click unsubscribe -----------------------------------------------------------

    async def unsubscribe(self, request: Request) -> Response:
        """RFC 8058: the mail client POSTs ``List-Unsubscribe=One-Click``. A GET or a
        HEAD (a person's click, or a link scanner) only shows a confirmation form."""
        token = request.path_params["token"]
        from relay.engine.contacts import unsubscribe

        try:
            address, channel = await run_in_threadpool(unsubscribe.resolve, self.relay, token)
        except RelayError:
            raise Refused(404, "unknown or invalid unsubscribe token") from None
        if request.method != "POST":
            return HTMLResponse(CONFIRM_PAGE)
        await self.endpoint.body(request)
        inbound = Inbound(
            sender=address,
            text="(one-click unsubscribe)",
            received_at=datetime.now(UTC),
            provider_message_id=f"{ONE_CLICK}{token.rsplit('.', 1)[-1]}",
            kind=InboundKind.UNSUBSCRIBE,
        )
        # Answered once nothing more can leave: the ingest waits for the sends
        # under way to settle (``Relay.ingest``).
        await self.endpoint.ingest(channel, Incoming(messages=[inbound]))
        return PlainTextResponse("unsubscribed\n")


# -- the app -------------------------------------------------------------------------------


class Trouble:
    """One log line per kind of store failure while it lasts, not a traceback per
    request: during an outage every request fails the same way. The first failure
    of each kind is logged, and once a request succeeds again, how many failed."""

    def __init__(self) -> None:
        self.failed: dict[str, int] = {}

    def failure(self, exc: BaseException) -> str:
        from relay.store import failures

        kind = failures.kind(exc)
        if kind not in self.failed:
            detail = " ".join(str(getattr(exc, "orig", None) or exc).split())[:300]
            log.error("store unavailable (%s): %s; answering 503 until it is back", kind, detail)
        self.failed[kind] = self.failed.get(kind, 0) + 1
        return kind

    def succeeded(self) -> None:
        if self.failed:
            counts = ", ".join(f"{n} x {kind}" for kind, n in sorted(self.failed.items()))
            log.warning("store back; %s request(s) answered 503 meanwhile", counts)
            self.failed.clear()


async def _dispatch(request: Request, handler: Any, trouble: Trouble) -> Response:
    from relay.store import failures

    try:
        answer = await handler(request)
    except Exception as exc:
        if isinstance(exc, Refused) or not failures.is_transient(exc):
            raise
        kind = trouble.failure(exc)
        return PlainTextResponse(
            f"store unavailable ({kind}); retry later\n",
            status_code=503,
            headers={"Retry-After": str(RETRY_AFTER)},
        )
    trouble.succeeded()
    return answer


async def _refusing(request: Request, handler: Any, trouble: Trouble) -> Response:
    try:
        return await _dispatch(request, handler, trouble)
    except Refused as refused:
        client = request.client.host if request.client else "?"
        log.warning(
            "refused %s %s from %s: %s (%s)",
            request.method,
            request.url.path,
            client,
            refused.status,
            refused.reason,
        )
        return PlainTextResponse(refused.reason + "\n", status_code=refused.status)


def build_app(relay: Runtime, *, max_body: int = MAX_BODY) -> Starlette:
    """The ASGI app; ``relay serve`` runs it on uvicorn, tests may call it directly."""
    endpoint = Endpoint(relay, push_writer(relay.store), max_body)
    handlers = Handlers(endpoint)
    trouble = Trouble()

    def route(path: str, handler: Any, methods: list[str]) -> Route:
        async def call(request: Request) -> Response:
            return await _refusing(request, handler, trouble)

        return Route(path, call, methods=methods)

    extra: list[Any] = []
    settings = relay.config.settings
    if settings.metrics.enabled:

        async def scrape(request: Request) -> Response:
            from relay.runner import metrics  # prometheus_client: only once scraped

            return await metrics.handle(relay, request)

        extra.append(Route("/metrics", scrape, methods=["GET"]))
    if settings.console.enabled:
        from relay.console.app import build

        extra.append(build(relay))
    return Starlette(
        routes=[
            *extra,
            route("/healthz", handlers.healthz, ["GET"]),
            route("/twilio/{channel}/inbound", handlers.twilio_inbound, ["POST"]),
            route("/twilio/{channel}/status", handlers.twilio_status, ["POST"]),
            route("/webhook/{channel}/inbound", handlers.webhook_inbound, ["POST"]),
            route("/telegram/{channel}/webhook", handlers.telegram_webhook, ["POST"]),
            route("/unsubscribe/{token}", handlers.unsubscribe, ["GET", "POST"]),
        ]
    )
