"""``relay mcp --http``: the MCP tools over the Streamable HTTP transport of the MCP SDK.

Every request must carry ``Authorization: Bearer <token>``, the token read from
the environment variable ``[mcp] token_env`` names (never from the file); a
request from a browser page (an ``Origin`` header) is refused unless that origin
is listed in ``[mcp] origins``. It binds to loopback unless told otherwise, and
the SDK's own Host check guards loopback against DNS rebinding. A ``wait`` call
blocks for at most ``[mcp] max_wait`` and then returns ``next``: the arguments
that carry on (no request is held for ten minutes).
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import socket
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from relay.core.errors import ConfigError

if TYPE_CHECKING:
    from relay.engine.runtime import Context

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

PATH = "/mcp"
log = logging.getLogger("relay.mcp")


def token_of(relay: Context) -> str:
    """The bearer token from the environment; a configuration error without one."""
    name = relay.config.settings.mcp.token_env
    token = os.environ.get(name, "").strip()
    if not token:
        raise ConfigError(
            f"relay mcp --http needs a bearer token: set the environment variable {name} "
            "(named by [mcp] token_env) to a long random secret"
        )
    return token


def origins_of(relay: Context) -> tuple[str, ...]:
    return tuple(o.strip() for o in relay.config.settings.mcp.origins.split(",") if o.strip())


class Guard:
    """The token and the origin, checked before the SDK sees a request."""

    def __init__(self, app: App, token: str, origins: tuple[str, ...]) -> None:
        self.app = app
        self.token = token.encode()
        self.origins = origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)  # the lifespan: the SDK's session manager
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        origin = headers.get("origin")
        if origin is not None and not allowed_origin(origin, self.origins):
            await _refuse(send, 403, f"origin {origin} is not allowed ([mcp] origins)")
            return
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            given.strip().encode(), self.token
        ):
            await _refuse(send, 401, "a bearer token is required", challenge=True)
            return
        await self.app(scope, receive, send)


def allowed_origin(origin: str, allowed: tuple[str, ...]) -> bool:
    """``origin`` is listed, or matches a ``scheme://host:*`` entry on any port."""
    for entry in allowed:
        if origin == entry:
            return True
        base = entry[:-1]  # "http://localhost:" of "http://localhost:*"
        if entry.endswith(":*") and origin.startswith(base) and origin[len(base) :].isdigit():
            return True
    return False


async def _refuse(send: Send, status: int, message: str, *, challenge: bool = False) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if challenge:
        headers.append((b"www-authenticate", b'Bearer realm="relay"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def build_app(relay: Context, host: str) -> App:
    """The guarded ASGI app (the SDK's Streamable HTTP app inside)."""
    from relay.engine.verbs.mcp_server import build_server

    settings = relay.config.settings.mcp
    server = build_server(relay, max_wait=settings.max_wait.total_seconds())
    inner = server.streamable_http_app(streamable_http_path=PATH, host=host)
    return Guard(inner, token_of(relay), origins_of(relay))


def serve(relay: Context, host: str | None = None, port: int | None = None) -> None:
    """Serve until SIGINT/SIGTERM; says on stderr where (``port`` 0: a free one)."""
    import uvicorn

    settings = relay.config.settings.mcp
    host = host or settings.host
    port = settings.port if port is None else port
    app = build_app(relay, host)  # the token first: no socket without one
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)  # before saying where: a client may connect at once
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    sys.stderr.write(
        f"relay: MCP on http://{shown}:{bound}{PATH} (Streamable HTTP; Ctrl-C stops)\n"
    )
    sys.stderr.flush()
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])
