"""``relay serve``: the inbound HTTP endpoint (Starlette on uvicorn).

It only stores what arrives: each request is verified, parsed into an
:class:`Incoming` and stored by :func:`relay.engine.verbs.incoming.ingest` (one
transaction), then answered at once; the daemon does the work (agent turns, deliveries). A request
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
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from relay.runner.serve_routes import MAX_BODY, Endpoint, Handlers, Refused

if TYPE_CHECKING:
    from relay.engine.runtime import Runtime

log = logging.getLogger("relay.serve")

#: Seconds a provider is asked to wait (``Retry-After``) while the store is away.
RETRY_AFTER = 5


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
    endpoint = Endpoint(relay, max_body)
    handlers = Handlers(endpoint)
    trouble = Trouble()

    def route(path: str, handler: Any, methods: list[str]) -> Route:
        async def call(request: Request) -> Response:
            return await _refusing(request, handler, trouble)

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


def serve(relay: Runtime, host: str, port: int, *, max_body: int = MAX_BODY) -> None:
    """Run until SIGINT/SIGTERM (uvicorn finishes the requests in flight)."""
    import uvicorn

    check_bind(relay, host)
    config = server_config(build_app(relay, max_body=max_body), host, port)
    # uvicorn re-raises the signal that stopped it once it has shut down, to the
    # handler that was there before; a no-op one makes a requested stop exit 0.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: None)
    log.info("relay serve listening on http://%s:%s", host, port)
    uvicorn.Server(config).run()
    log.info("relay serve stopped")


def server_config(app: Any, host: str, port: int) -> Any:
    """uvicorn's settings for ``relay serve`` (``bench/serve_inbound.py`` runs its
    bare reference app on the same)."""
    import uvicorn

    return uvicorn.Config(
        app, host=host, port=port, log_level="warning", access_log=False, lifespan="off"
    )


def check_bind(relay: Runtime, host: str) -> None:
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
