"""The web console's routes, mounted by ``relay serve`` under ``/ui/`` when
``[console] enabled = true`` (see docs/console.md).

Server-rendered pages (Jinja2, autoescaped: contacts' text is shown as text),
a little JavaScript for live updates from ``/ui/events`` (server-sent events
from the event log, resuming from its cursor), no build step. Every request but
the sign-in page and the static files needs a session; every POST needs the
session's CSRF token, and an action needs the operator role. Actions go through
the verbs :class:`relay.api.Relay` delegates to (:mod:`relay.engine.verbs`), so the
state machine refuses exactly as on the CLI;
the refusal is shown on the page.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from relay.console import approvals, auth, pages
from relay.core.errors import InvalidInput, NotFound, RelayError
from relay.engine.runtime import Context
from relay.engine.verbs import conversations
from relay.engine.verbs.program import read_events

if TYPE_CHECKING:
    from relay.engine.runtime import Runtime

log = logging.getLogger("relay.console")

HERE = Path(__file__).parent
PREFIX = "/ui"
#: How long one event stream stays open; the browser reconnects with the last
#: cursor it saw (Last-Event-ID), so a server can stop without waiting on it.
STREAM_SECONDS = 10.0
POLL_SECONDS = 1.0
MAX_FORM = 16 * 1024

Handler = Callable[[Request], Awaitable[Response]]


class Console:
    """The pages over one relay's runtime, whose actions are audited as the console's."""

    def __init__(
        self, relay: Context, gate: auth.Gate, throttle: auth.Throttle | None = None
    ) -> None:
        self.relay = relay
        self.gate = gate
        self.throttle = throttle or auth.Throttle()
        self.templates = Environment(
            loader=FileSystemLoader(HERE / "templates"),
            autoescape=select_autoescape(["html"], default=True),
        )
        self.templates.globals.update(prefix=PREFIX, when=pages.when)

    # -- plumbing -------------------------------------------------------------------

    def render(
        self, request: Request, template: str, status: int = 200, **context: Any
    ) -> HTMLResponse:
        session: auth.Session | None = request.scope.get("relay_session")
        done = request.query_params.get("done")
        flash = done if done in DONE.values() else None  # never text from a link
        body = self.templates.get_template(template).render(
            session=session, path=request.url.path, flash=flash, **context
        )
        return HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS)

    def guarded(self, handler: Handler, *, action: bool = False) -> Handler:
        """``handler`` for signed-in users only; ``action``: an operator's POST with
        the session's CSRF token."""

        async def call(request: Request) -> Response:
            session = self.gate.session(request.cookies.get(auth.COOKIE))
            if session is None:
                return unsigned(request)
            request.scope["relay_session"] = session
            if request.method == "POST":
                form = await read_form(request)
                refused = refuse_post(request, session, form, action)
                if refused is not None:
                    return refused
                request.scope["relay_form"] = form
            try:
                return await handler(request)
            except NotFound as exc:
                return self.render(request, "error.html", 404, message=exc.message)
            except InvalidInput as exc:
                return self.render(request, "error.html", 400, message=exc.message)

        return call

    # -- signing in -------------------------------------------------------------------

    async def login_page(self, request: Request) -> Response:
        token = request.cookies.get(auth.LOGIN_COOKIE) or secrets.token_urlsafe(24)
        response = self.render(
            request, "login.html", csrf=token, next=safe_next(request.query_params.get("next"))
        )
        self._cookie(request, response, auth.LOGIN_COOKIE, token, max_age=3600)
        return response

    async def login(self, request: Request) -> Response:
        form = await read_form(request)
        if not auth.same_token(request.cookies.get(auth.LOGIN_COOKIE), form.get("csrf")):
            return PlainTextResponse("missing or wrong CSRF token\n", status_code=403)
        client = request.client.host if request.client else "?"
        target = safe_next(form.get("next"))
        token = request.cookies.get(auth.LOGIN_COOKIE)
        if self.throttle.blocked(client):
            log.warning("console: sign-in refused: too many failures from %s", client)
            busy = "Too many failed sign-ins from here; try again later."
            return self.render(request, "login.html", 429, csrf=token, next=target, error=busy)
        role = await run_in_threadpool(self.gate.sign_in, form.get("token", ""))
        if role is None:
            self.throttle.failed(client)
            log.warning("console: a failed sign-in from %s", client)
            wrong = "Wrong token or password."
            return self.render(request, "login.html", 403, csrf=token, next=target, error=wrong)
        log.info("console: %s signed in", role)
        response = RedirectResponse(target, status_code=303)
        self._cookie(request, response, auth.COOKIE, self.gate.cookie_for(role),
                     max_age=int(self.gate.max_age))  # fmt: skip
        response.delete_cookie(auth.LOGIN_COOKIE, path=PREFIX)
        return response

    async def logout(self, request: Request) -> Response:
        response = RedirectResponse(f"{PREFIX}/login", status_code=303)
        response.delete_cookie(auth.COOKIE, path=PREFIX)
        return response

    @staticmethod
    def _cookie(request: Request, response: Response, name: str, value: str, max_age: int) -> None:
        response.set_cookie(
            name, value, max_age=max_age, path=PREFIX, httponly=True, samesite="lax",
            secure=request.url.scheme == "https",
        )  # fmt: skip

    # -- pages ------------------------------------------------------------------------

    async def list_page(self, request: Request) -> Response:
        params = request.query_params
        query = pages.parse_query(params, params.getlist("state"))
        context = await run_in_threadpool(pages.conversations, self.relay, query)
        link = page_link(params)
        cursor = await self._cursor()
        return self.render(request, "list.html", cursor=cursor, page_link=link, **context)

    async def needs_person(self, request: Request) -> Response:
        page = request.query_params.get("page") or "1"
        context = await run_in_threadpool(pages.needs_person, self.relay, page)
        return self.render(
            request, "needs.html", cursor=await self._cursor(),
            page_link=page_link(request.query_params), **context,
        )  # fmt: skip

    async def conversation_page(self, request: Request, error: str | None = None) -> Response:
        instance_id = request.path_params["id"]
        context = await run_in_threadpool(pages.conversation, self.relay, instance_id)
        status = 409 if error else 200
        return self.render(
            request, "conversation.html", status, cursor=await self._cursor(), error=error,
            **context,
        )  # fmt: skip

    async def campaigns_page(self, request: Request) -> Response:
        chosen = (request.query_params.get("campaign") or "").strip() or None
        context = await run_in_threadpool(pages.campaigns, self.relay, chosen)
        return self.render(request, "campaigns.html", **context)

    # -- actions ---------------------------------------------------------------------

    async def act(self, request: Request) -> Response:
        """pause, resume, cancel, send, approve or reject, through the API; a refusal
        re-renders the page with the state machine's words and 409."""
        instance_id = request.path_params["id"]
        verb = request.path_params["verb"]
        form: dict[str, str] = request.scope["relay_form"]
        call = await run_in_threadpool(self._verb, verb, instance_id, form)
        try:
            await run_in_threadpool(call)
        except (NotFound, InvalidInput):
            raise
        except RelayError as exc:
            log.info("console: %s on %s refused: %s", verb, instance_id, exc.message)
            if form.get("from") == "needs":
                return self.render(request, "error.html", 409, message=exc.message)
            return await self.conversation_page(request, error=exc.message)
        back = f"{PREFIX}/needs" if form.get("from") == "needs" else f"{PREFIX}/c/{instance_id}"
        return RedirectResponse(f"{back}?{urlencode({'done': DONE[verb]})}", status_code=303)

    def _verb(self, verb: str, instance_id: str, form: dict[str, str]) -> Callable[[], Any]:
        relay = self.relay
        reason = (form.get("reason") or "").strip() or None
        if verb == "pause":
            return lambda: conversations.pause(relay, instance_id, reason=reason)
        if verb == "resume":
            return lambda: conversations.resume(relay, instance_id)
        if verb == "cancel":
            return lambda: conversations.cancel(relay, instance_id, reason=reason)
        if verb == "send":
            text = form.get("text") or ""
            return lambda: conversations.send(relay, instance_id, text)
        if verb in ("approve", "reject"):
            return approvals.action(relay, verb, instance_id, form)
        raise NotFound(f"no action {verb!r}")

    # -- live updates ----------------------------------------------------------------

    async def _cursor(self) -> int:
        from relay.store import events

        def latest() -> int:
            with self.relay.store.read_transaction() as session:
                return events.last_id(session)

        return await run_in_threadpool(latest)

    async def events(self, request: Request) -> Response:
        """Server-sent events from the event log after the cursor the page was drawn
        at (or the browser's Last-Event-ID when it reconnects)."""
        given = request.headers.get("last-event-id") or request.query_params.get("after") or ""
        cursor = int(given) if given.isdigit() else await self._cursor()
        return StreamingResponse(
            self._stream(request, cursor),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    async def _stream(self, request: Request, cursor: int) -> AsyncIterator[str]:
        yield "retry: 1000\n\n"
        loop = asyncio.get_running_loop()
        ends = loop.time() + STREAM_SECONDS
        while loop.time() < ends and not await request.is_disconnected():
            found = await run_in_threadpool(read_events, self.relay, since=cursor, limit=200)
            for event in found:
                cursor = event.id
                data = {"kind": event.kind, "instance_id": event.instance_id}
                yield f"id: {event.id}\nevent: relay\ndata: {json.dumps(data)}\n\n"
            if not found:
                yield ": idle\n\n"
            await asyncio.sleep(POLL_SECONDS)

    # -- the routes ---------------------------------------------------------------------

    def routes(self) -> list[Route | Mount]:
        g = self.guarded
        return [
            Route("/", g(self.list_page), methods=["GET"]),
            Route("/login", self.login_page, methods=["GET"]),
            Route("/login", self.login, methods=["POST"]),
            Route("/logout", g(self.logout), methods=["POST"]),
            Route("/needs", g(self.needs_person), methods=["GET"]),
            Route("/campaigns", g(self.campaigns_page), methods=["GET"]),
            Route("/events", g(self.events), methods=["GET"]),
            Route("/c/{id}", g(self.conversation_page), methods=["GET"]),
            Route("/c/{id}/{verb}", g(self.act, action=True), methods=["POST"]),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ]


def unsigned(request: Request) -> Response:
    """No session: a page is sent to the sign-in form (and back after); anything
    else is refused."""
    if request.method == "GET" and not request.url.path.endswith("/events"):
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"{PREFIX}/login?{urlencode({'next': target})}", status_code=303)
    return PlainTextResponse("sign in first\n", status_code=401)


def refuse_post(
    request: Request, session: auth.Session, form: dict[str, str], action: bool
) -> Response | None:
    """403 for a POST without the session's CSRF token, or a read-only user's action."""
    if not auth.same_token(session.csrf, form.get("csrf")):
        log.warning("console: refused a POST to %s without its CSRF token", request.url.path)
        return PlainTextResponse("missing or wrong CSRF token\n", status_code=403)
    if action and not session.can_act:
        log.warning("console: refused a read-only user's POST to %s", request.url.path)
        return PlainTextResponse("read-only users cannot act\n", status_code=403)
    return None


DONE = {
    "pause": "paused",
    "resume": "resumed",
    "cancel": "cancelled",
    "send": "message queued",
    "approve": "draft approved and queued",
    "reject": "draft rejected: the agent writes a new one",
}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; style-src 'self'; script-src 'self'; "
    "img-src 'self' data:; frame-ancestors 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


async def read_form(request: Request) -> dict[str, str]:
    """The urlencoded form, at most :data:`MAX_FORM` bytes."""
    from urllib.parse import parse_qsl

    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM:
            raise InvalidInput(f"form over {MAX_FORM} bytes")
    try:
        return dict(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
    except UnicodeDecodeError:
        raise InvalidInput("form is not UTF-8") from None


def safe_next(target: str | None) -> str:
    """Where to go after signing in: a console path only (no open redirect)."""
    if target and target.startswith(PREFIX + "/") and not target.startswith("//"):
        return target
    return PREFIX + "/"


def page_link(params: Any) -> Callable[[int], str]:
    """A link to page ``n`` of the same filters."""

    def link(n: int) -> str:
        pairs = [(k, v) for k, v in params.multi_items() if k != "page"]
        return "?" + urlencode([*pairs, ("page", str(n))])

    return link


def build(relay: Runtime) -> Mount:
    """``/ui`` for ``relay serve``: refused at start (a ConfigError) when no
    credential is configured."""
    gate = auth.Gate.from_settings(relay.config.settings.console)
    console_relay = Context(relay.store, relay.config, relay.clock, actor="console")
    return Mount(PREFIX, routes=Console(console_relay, gate).routes())
