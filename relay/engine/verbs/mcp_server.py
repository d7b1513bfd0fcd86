"""``relay mcp``: relay's verbs as tools of an MCP server, so an AI agent that speaks
the Model Context Protocol can delegate a conversation without a shell. Needs the
optional extra ``relay-outreach[mcp]`` (the official ``mcp`` SDK).

Each tool is a thin call to the verb :class:`relay.api.Relay` calls, and returns the same
JSON document as the matching ``relay ... --json`` command (with ``schema_version``).

A relay error comes back as a tool error the caller can act on (:func:`failure`):
its text is the line the CLI prints, and its structured content says the kind
(``refused``, ``not_found``, ``invalid``, ``config``, ``unavailable``), the
conversation's state and what would work instead. Such errors are the caller's
to handle, so the server logs nothing for them; only a real crash is logged as one.
The transports (stdio, Streamable HTTP) live in :mod:`relay.runner.mcp_http` and
:func:`serve`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent
from sqlalchemy.exc import OperationalError

from relay import __version__
from relay.core.errors import Refused, RelayError
from relay.core.jsonshape import versioned
from relay.core.refusals import VERBS, commands_that_work, database_line, kind_of, message_of
from relay.core.secrets import mask_text
from relay.engine.verbs import conversations, lookups, starting
from relay.engine.verbs.program import read_events

if TYPE_CHECKING:
    from relay.engine.runtime import Context

INSTRUCTIONS = """relay conducts a text conversation with one contact for you. Call `start`
with the contact, an objective and todos (a todo may end with ::KIND for a structured
answer: date, time, datetime, number, yesno, email, phone, choice(a,b), text; ? makes it
optional). Then `wait` (for: done, reply, answer, needs-human) and read `result`: each
todo's answer as data. `meta` you pass to `start` comes back in every result. A failed
call returns the reason as text and as data (kind, state, the tools that would work);
a wait's `warnings` say when no daemon is running to do the due work; a wait cut
short by the server's limit returns `next`: call `wait` again with its arguments."""

#: The MCP tool for each event an operator command triggers.
TOOLS = {"pause": "pause", "resume": "resume", "cancel": "cancel", "manual_send": "send"}

F = TypeVar("F", bound=Callable[..., Any])


def failure(exc: RelayError) -> CallToolResult:
    """A relay error as an MCP tool error: the CLI's line, and the same as data."""
    line = f"relay: error: {mask_text(message_of(exc))}"
    data: dict[str, Any] = {
        "error": {
            "kind": kind_of(exc),
            "message": mask_text(message_of(exc)),
            "exit_code": exc.exit_code,
            "instance_id": None,
            "state": None,
            "event": None,
            "commands": [],
            "tools": [],
        }
    }
    if isinstance(exc, Refused):
        data["error"].update(
            instance_id=exc.instance_id,
            state=exc.state,
            event=exc.event,
            commands=commands_that_work(exc),
            tools=[TOOLS[e] for e in exc.allowed if e in TOOLS and e in VERBS],
        )
    return CallToolResult(
        content=[TextContent(type="text", text=line)], structured_content=data, is_error=True
    )


def _unavailable(exc: OperationalError) -> CallToolResult:
    line = database_line(exc)
    data = {"error": {"kind": "unavailable", "message": line, "exit_code": 2}}
    return CallToolResult(
        content=[TextContent(type="text", text=f"relay: error: {line}")],
        structured_content=data,
        is_error=True,
    )


def guarded(tool: F) -> F:
    """The tool, answering a relay error (or a database that cannot be reached) as
    :func:`failure` rather than raising it (the SDK would hide its text and log a
    traceback). Anything else is a crash and is left to the SDK to report as one."""
    if inspect.iscoroutinefunction(tool):

        @functools.wraps(tool)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            try:
                return await tool(*args, **kwargs)
            except RelayError as exc:
                return failure(exc)
            except OperationalError as exc:
                return _unavailable(exc)

        return run_async  # type: ignore[return-value]

    @functools.wraps(tool)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return tool(*args, **kwargs)
        except RelayError as exc:
            return failure(exc)
        except OperationalError as exc:
            return _unavailable(exc)

    return run  # type: ignore[return-value]


def build_server(rt: Context, *, max_wait: float | None = None) -> MCPServer:
    """The server with every tool; ``max_wait``: the longest one ``wait`` call may
    block, in seconds (None: as long as the caller asks)."""
    server = MCPServer("relay", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    _start_tool(server, rt)
    _conversation_tools(server, rt)
    _wait_tool(server, rt, max_wait)
    _operator_tools(server, rt)
    _draft_tools(server, rt)
    return server


def _tool(server: MCPServer) -> Callable[[F], F]:
    """``server.tool()`` over :func:`guarded`."""

    def register(function: F) -> F:
        server.tool()(guarded(function))
        return function

    return register


def _conversation_tools(server: MCPServer, rt: Context) -> None:
    @_tool(server)
    def status() -> dict[str, Any]:
        """Conversations per state, queue, outbox, live daemons and warnings."""
        return versioned(lookups.status(rt).to_json())

    @_tool(server)
    def show(instance_id: str) -> dict[str, Any]:
        """One conversation: state, todos with their answers, meta, next heartbeat."""
        return versioned(conversations.get(rt, instance_id).to_json())

    @_tool(server)
    def transcript(instance_id: str) -> dict[str, Any]:
        """The conversation's messages in order, with delivery status."""
        return {
            "messages": versioned([m.to_json() for m in conversations.transcript(rt, instance_id)])
        }

    @_tool(server)
    def result(instance_id: str) -> dict[str, Any]:
        """Each todo's status, answer and the message it came from (final once ended)."""
        return versioned(lookups.result(rt, instance_id).to_json())


def _start_tool(server: MCPServer, rt: Context) -> None:
    @_tool(server)
    def start(
        contact: str,
        objective: str,
        todos: list[str],
        meta: dict[str, Any] | None = None,
        heartbeat: str | None = None,
        max_followups: int | None = None,
        channel: str | None = None,
        agent: str | None = None,
        run_first_turn: bool = True,
        approval: str | None = None,
        fallback_after: str | None = None,
    ) -> dict[str, Any]:
        """Start a conversation with a contact (phone number or email address).
        approval: none, first (a person approves the opening message) or all (every
        message of the agent waits as a draft for `approve`). channel: one, or a ladder
        such as "whatsapp,sms,email" (the next is used when a message is undeliverable or
        after fallback_after, such as "2d", of silence)."""
        options: dict[str, Any] = {"approval": approval} if approval else {}
        if fallback_after:
            options["fallback_after"] = fallback_after
        view = starting.start(
            rt,
            contact,
            objective,
            todos,
            meta=meta,
            heartbeat=heartbeat,
            max_followups=max_followups,
            channel=channel,
            agent=agent,
            defer=not run_first_turn,
            **options,
        )
        return versioned(view.to_json())


def _wait_tool(server: MCPServer, rt: Context, max_wait: float | None) -> None:
    @_tool(server)
    async def wait(
        instance_ids: list[str],
        until: str = "done",
        timeout: str = "10m",
        since: str | None = None,
        require_daemon: bool = False,
    ) -> dict[str, Any]:
        """Block until the condition (until: done, reply, answer, needs-human) holds or
        the timeout passes; the answer's outcome is met, needs_human, timeout, ended or
        no_daemon (require_daemon, and work is due with no daemon running). `warnings`
        says when no daemon is running; `next`, when present, holds the arguments to
        call `wait` with again (the server cut this call short)."""
        from relay.engine.verbs.waiting import bounded

        def block() -> dict[str, Any]:
            return bounded(
                rt,
                instance_ids,
                until=until,
                timeout=timeout,
                since=since,
                require_daemon=require_daemon,
                max_wait=max_wait,
            )

        return versioned(await anyio.to_thread.run_sync(block))


def _operator_tools(server: MCPServer, rt: Context) -> None:
    @_tool(server)
    def send(instance_id: str, text: str) -> dict[str, Any]:
        """Step in: queue a message of yours to the contact (the daemon delivers it)."""
        return versioned(conversations.send(rt, instance_id, text).to_json())

    @_tool(server)
    def pause(instance_id: str, reason: str | None = None) -> dict[str, Any]:
        """Pause a conversation: no follow-ups or turns until it is resumed."""
        return versioned(conversations.pause(rt, instance_id, reason=reason).to_json())

    @_tool(server)
    def resume(instance_id: str) -> dict[str, Any]:
        """Resume a paused conversation, or one waiting for a human."""
        return versioned(conversations.resume(rt, instance_id).to_json())

    @_tool(server)
    def cancel(instance_id: str, reason: str | None = None) -> dict[str, Any]:
        """Cancel a conversation: it fails with reason "cancelled"; nothing more is sent."""
        return versioned(conversations.cancel(rt, instance_id, reason=reason).to_json())

    @_tool(server)
    def events(
        since: str | None = None, instance_id: str | None = None, limit: int = 200
    ) -> dict[str, Any]:
        """Events after a cursor, oldest first; pass the last one's cursor next time."""
        ids = [instance_id] if instance_id else None
        found = read_events(rt, since=since, instance_ids=ids, limit=limit)
        return {"events": versioned([e.to_json() for e in found])}


def _draft_tools(server: MCPServer, rt: Context) -> None:
    from relay.engine.verbs import drafts as draft_verbs

    @_tool(server)
    def drafts(instance_id: str | None = None) -> dict[str, Any]:
        """The agent's messages awaiting a person's approval (conversations started
        with approval first or all), oldest first, with how long each has waited."""
        found = draft_verbs.pending(rt, instance_id)
        return {"drafts": versioned([d.to_json() for d in found])}

    @_tool(server)
    def approve(message_id: int, text: str | None = None) -> dict[str, Any]:
        """Send a draft (or `text` instead; the edit is recorded). It is queued like any
        message: a pause, an opt-out, a cancel or the sending window still hold it."""
        return versioned(draft_verbs.approve(rt, message_id, actor=rt.who(), text=text).to_json())

    @_tool(server)
    def reject(message_id: int, reason: str) -> dict[str, Any]:
        """Discard a draft; the agent's next turn reads the reason and writes a new one."""
        return versioned(
            draft_verbs.reject(rt, message_id, actor=rt.who(), reason=reason).to_json()
        )


def serve(rt: Context) -> None:
    """Serve on stdin/stdout until the client closes the connection."""
    server = build_server(rt)
    if getattr(server, "_lowlevel_server", None) is None:  # an SDK laid out otherwise
        server.run("stdio")
        return
    anyio.run(_serve_stdio, server)


#: A request nesting deeper than this is cut here before the SDK parses it:
#: its parser gives up past a few hundred levels and then drops the request
#: without an answer. What is cut becomes null, which the tool's own checks
#: refuse (``meta`` nests at most ``relay.engine.verbs.program.MAX_META_DEPTH``).
MAX_WIRE_DEPTH = 64


async def _serve_stdio(server: MCPServer) -> None:
    import io
    import os

    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server  # what run_stdio_async runs, with a guarded stdin
    raw = io.TextIOWrapper(os.fdopen(os.dup(0), "rb"), encoding="utf-8", errors="replace")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # children read EOF, as the SDK arranges
    stdin = _Shallow(anyio.wrap_file(raw))
    async with stdio_server(stdin=stdin) as (read_stream, write_stream):  # type: ignore[arg-type]
        options = lowlevel.create_initialization_options()
        await lowlevel.run(read_stream, write_stream, options)


class _Shallow:
    """The lines of ``stdin``, each nesting at most :data:`MAX_WIRE_DEPTH` levels."""

    def __init__(self, stdin: Any) -> None:
        self.stdin = stdin

    def __aiter__(self) -> Any:
        return self._lines()

    async def _lines(self) -> Any:
        async for line in self.stdin:
            yield _cut_line(line)


def _cut_line(line: str) -> str:
    import json

    if line.count("{") + line.count("[") <= MAX_WIRE_DEPTH:
        return line  # cannot nest deeper: most lines, passed as they are
    try:
        return json.dumps(_cut(json.loads(line), MAX_WIRE_DEPTH)) + "\n"
    except (ValueError, RecursionError):
        return line  # not JSON the SDK can read either: its own error handling


def _cut(value: Any, depth: int) -> Any:
    if isinstance(value, dict):
        return {k: _cut(v, depth - 1) for k, v in value.items()} if depth > 0 else None
    if isinstance(value, list):
        return [_cut(v, depth - 1) for v in value] if depth > 0 else None
    return value
