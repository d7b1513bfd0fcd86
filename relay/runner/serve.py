"""``relay serve``: the inbound HTTP endpoint (Starlette on uvicorn).

It only stores what arrives: each request is verified, parsed into an
:class:`Incoming` and handed to ``Relay.ingest`` (one transaction), then
answered at once; the daemon does the work (agent turns, deliveries). A request
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
"""

from __future__ import annotations

import logging
import signal
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl
from xml.sax.saxutils import escape

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from relay.channels.base import Incoming
from relay.core.errors import RelayError
from relay.engine.backends import Channels, channel_kind

if TYPE_CHECKING:
    from relay.engine.service import Relay

log = logging.getLogger("relay.serve")

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
    """The handlers, over one :class:`Relay` (its store's connection pool is shared
    by the worker threads that run ``ingest``)."""

    def __init__(self, relay: Relay, max_body: int = MAX_BODY) -> None:
        self.relay = relay
        self.max_body = max_body
        self.channels = Channels(relay)

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

    async def ingest(self, name: str, incoming: Incoming) -> None:
        await run_in_threadpool(self.relay.ingest, name, incoming)


async def _dispatch(request: Request, handler: Any) -> Response:
    try:
        return await handler(request)
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


def build_app(relay: Relay, *, max_body: int = MAX_BODY) -> Starlette:
    """The ASGI app; ``relay serve`` runs it on uvicorn, tests may call it directly."""
    from relay.runner import serve_routes

    endpoint = Endpoint(relay, max_body)
    handlers = serve_routes.Handlers(endpoint)

    def route(path: str, handler: Any, methods: list[str]) -> Route:
        async def call(request: Request) -> Response:
            return await _dispatch(request, handler)

        return Route(path, call, methods=methods)

    extra: list[Any] = []
    settings = relay.config.settings
    if settings.metrics.enabled:
        from relay.runner.metrics import MetricsEndpoint

        extra.append(Route("/metrics", MetricsEndpoint(relay).handle, methods=["GET"]))
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


def serve(relay: Relay, host: str, port: int, *, max_body: int = MAX_BODY) -> None:
    """Run until SIGINT/SIGTERM (uvicorn finishes the requests in flight)."""
    import uvicorn

    check_bind(relay, host)
    app = build_app(relay, max_body=max_body)
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", access_log=False, lifespan="off"
    )
    # uvicorn re-raises the signal that stopped it once it has shut down, to the
    # handler that was there before; a no-op one makes a requested stop exit 0.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: None)
    log.info("relay serve listening on http://%s:%s", host, port)
    uvicorn.Server(config).run()
    log.info("relay serve stopped")


def check_bind(relay: Relay, host: str) -> None:
    """The console listens on loopback only unless ``[console] allow_remote``: put
    it behind a TLS reverse proxy instead (docs/operations.md)."""
    import ipaddress

    console = relay.config.settings.console
    if not console.enabled or console.allow_remote:
        return
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        from relay.core.errors import ConfigError

        raise ConfigError(
            f"relay serve --host {host}: the console listens on loopback only; put it "
            "behind a TLS reverse proxy, or set allow_remote = true in [console]"
        )


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
