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

The one writer (:class:`PushWriter`): what the requests pushed, group-committed.

Each verified request hands its row (channel, the :class:`Incoming` as JSON,
the time) to a queue and waits; one thread owns the writing, takes every row
queued meanwhile and INSERTs them in one transaction
(:class:`relay.store.pushes.Appender`), then answers each request only after
that commit. So a request is acknowledged only once it is stored; the
server's requests never wait on each other's database locks (on SQLite every
``BEGIN IMMEDIATE`` of the thread pool queued on the file's one write lock);
and a burst costs one commit per batch, not one per request. At low load a
batch is the one request there is: nothing waits to fill a batch.

A failure fails every request of its batch with the database's exception (the
app answers 503 + Retry-After for an outage, as before); one that is not
transient (nothing a push stores should cause one: its text is ASCII JSON) is
retried row by row, so that one bad row fails only its own request.

On SQLite one thread writes: the file has one write lock, so a second writer
would only wait for it. On PostgreSQL, where a commit waits for the WAL to
reach the disk and INSERTs into ``pushes`` never wait on each other,
:data:`PG_WRITERS` threads each commit a batch at once, so a commit's flush
does not hold back the requests that arrive meanwhile; there a batch is one
INSERT on an autocommit connection: one round trip, no BEGIN or COMMIT.

The threads start with the first request and end after :data:`IDLE_SECONDS`
without one (an app built by a test leaves no thread behind for long).
"""

from __future__ import annotations

import asyncio
import logging
import queue
import signal
import threading
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from relay.runner.serve_routes import MAX_BODY, Endpoint, Handlers, Refused

if TYPE_CHECKING:
    from relay.engine.runtime import Runtime
    from relay.store.database import Store

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
    endpoint = Endpoint(relay, PushWriter(relay.store).store_push, max_body)
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


# -- the one writer ----------------------------------------------------------------------
#: The most rows one transaction takes.
MAX_BATCH = 500
#: Seconds a writer waits for a request before its thread ends.
IDLE_SECONDS = 5.0
#: Writer threads on PostgreSQL (on SQLite: one).
PG_WRITERS = 2


@dataclass(frozen=True, slots=True)
class _Pending:
    row: dict[str, Any]
    loop: asyncio.AbstractEventLoop
    done: asyncio.Future[None]


def _answer(batch: list[_Pending], error: BaseException | None) -> None:
    """Settle the batch's futures, one hand-off to each event loop (not one per
    request: each wakes the loop with a write to its self-pipe)."""
    by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
    for pending in batch:
        by_loop.setdefault(pending.loop, []).append(pending.done)
    for loop, futures in by_loop.items():
        try:
            loop.call_soon_threadsafe(_settle, futures, error)
        except RuntimeError:  # that loop is closed: nobody waits for these answers
            log.debug("%d push(es) answered to a closed event loop", len(futures))


def _settle(futures: list[asyncio.Future[None]], error: BaseException | None) -> None:
    for done in futures:
        if done.cancelled():
            continue  # the client went away; the row is stored (or not) all the same
        if error is None:
            done.set_result(None)
        else:
            done.set_exception(error)


class PushWriter:
    """The app's one writer of what the requests pushed (see the module)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.queue: queue.SimpleQueue[_Pending] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.writers = 1 if store.writers_serialised else PG_WRITERS
        self.running = 0
        self.local = threading.local()

    async def store_push(self, channel: str, incoming: str, received_at: datetime) -> None:
        """Return once the row is committed; raise what the database raised if not."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        row = {"channel": channel, "incoming": incoming, "received_at": received_at}
        self.queue.put(_Pending(row, loop, done))
        self._ensure_running()
        await done

    def _ensure_running(self) -> None:
        with self.lock:
            while self.running < self.writers:
                thread = threading.Thread(target=self._run, name="relay-serve-writer")
                thread.daemon = True
                thread.start()
                self.running += 1

    def _run(self) -> None:
        while True:
            try:
                first = self.queue.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with self.lock:
                    if self.queue.empty():
                        self.running -= 1
                        self._close()
                        return
                continue
            batch = [first]
            while len(batch) < MAX_BATCH:
                try:
                    batch.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            self._write(batch)

    def _write(self, batch: list[_Pending]) -> None:
        from relay.store import failures

        try:
            self._insert(batch)
        except Exception as exc:
            if failures.is_transient(exc) or len(batch) == 1:
                _answer(batch, exc)
                return
            log.warning("storing %d pushes one by one after %s", len(batch), failures.kind(exc))
            for pending in batch:
                self._write([pending])
            return
        _answer(batch, None)

    def _insert(self, batch: list[_Pending]) -> None:
        from relay.store.pushes import Appender

        appender: Appender | None = getattr(self.local, "appender", None)
        if appender is None:
            appender = self.local.appender = Appender(self.store)
        appender.append([pending.row for pending in batch])

    def _close(self) -> None:
        appender = getattr(self.local, "appender", None)
        self.local.appender = None
        if appender is not None:
            appender.close()
