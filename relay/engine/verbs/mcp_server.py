"""``relay mcp``: relay's verbs as tools of an MCP server (stdio transport), so an AI
agent that speaks the Model Context Protocol can delegate a conversation without a
shell. Needs the optional extra ``relay-outreach[mcp]`` (the official ``mcp`` SDK).

Each tool is a thin call to :class:`relay.engine.verbs.service.Relay` and returns the same
JSON document as the matching ``relay ... --json`` command (with ``schema_version``).
Errors (an unknown id, a refused state change) come back as tool errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.mcpserver import MCPServer

from relay.core.jsonshape import versioned

if TYPE_CHECKING:
    from relay.engine.verbs.service import Relay

INSTRUCTIONS = """relay conducts a text conversation with one contact for you. Call `start`
with the contact, an objective and todos (a todo may end with ::KIND for a structured
answer: date, time, datetime, number, yesno, email, phone, choice(a,b), text; ? makes it
optional). Then `wait` (for: done, reply, answer, needs-human) and read `result`: each
todo's answer as data. `meta` you pass to `start` comes back in every result."""


def build_server(relay: Relay) -> MCPServer:
    server = MCPServer("relay", instructions=INSTRUCTIONS)
    _start_tool(server, relay)
    _conversation_tools(server, relay)
    _wait_tool(server, relay)
    _operator_tools(server, relay)
    return server


def _conversation_tools(server: MCPServer, relay: Relay) -> None:
    @server.tool()
    def status() -> dict[str, Any]:
        """Conversations per state, queue, outbox and live daemons."""
        return versioned(relay.status().to_json())

    @server.tool()
    def show(instance_id: str) -> dict[str, Any]:
        """One conversation: state, todos with their answers, meta, next heartbeat."""
        return versioned(relay.get(instance_id).to_json())

    @server.tool()
    def transcript(instance_id: str) -> dict[str, Any]:
        """The conversation's messages in order, with delivery status."""
        return {"messages": versioned([m.to_json() for m in relay.transcript(instance_id)])}

    @server.tool()
    def result(instance_id: str) -> dict[str, Any]:
        """Each todo's status, answer and the message it came from (final once ended)."""
        return versioned(relay.result(instance_id).to_json())


def _start_tool(server: MCPServer, relay: Relay) -> None:
    @server.tool()
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
    ) -> dict[str, Any]:
        """Start a conversation with a contact (phone number or email address)."""
        view = relay.start(
            contact,
            objective,
            todos,
            meta=meta,
            heartbeat=heartbeat,
            max_followups=max_followups,
            channel=channel,
            agent=agent,
            defer=not run_first_turn,
        )
        return versioned(view.to_json())


def _wait_tool(server: MCPServer, relay: Relay) -> None:
    @server.tool()
    async def wait(
        instance_ids: list[str], until: str = "done", timeout: str = "10m", since: str | None = None
    ) -> dict[str, Any]:
        """Block until the condition (until: done, reply, answer, needs-human) holds or
        the timeout passes; the answer's outcome is met, needs_human, timeout or ended."""

        def block() -> dict[str, Any]:
            return versioned(
                relay.wait(instance_ids, until=until, timeout=timeout, since=since).to_json()
            )

        return await anyio.to_thread.run_sync(block)


def _operator_tools(server: MCPServer, relay: Relay) -> None:
    @server.tool()
    def send(instance_id: str, text: str) -> dict[str, Any]:
        """Step in: queue a message of yours to the contact (the daemon delivers it)."""
        return versioned(relay.send(instance_id, text).to_json())

    @server.tool()
    def pause(instance_id: str, reason: str | None = None) -> dict[str, Any]:
        """Pause a conversation: no follow-ups or turns until it is resumed."""
        return versioned(relay.pause(instance_id, reason=reason).to_json())

    @server.tool()
    def resume(instance_id: str) -> dict[str, Any]:
        """Resume a paused conversation, or one waiting for a human."""
        return versioned(relay.resume(instance_id).to_json())

    @server.tool()
    def cancel(instance_id: str, reason: str | None = None) -> dict[str, Any]:
        """Cancel a conversation: it fails with reason "cancelled"; nothing more is sent."""
        return versioned(relay.cancel(instance_id, reason=reason).to_json())

    @server.tool()
    def events(
        since: str | None = None, instance_id: str | None = None, limit: int = 200
    ) -> dict[str, Any]:
        """Events after a cursor, oldest first; pass the last one's cursor next time."""
        ids = [instance_id] if instance_id else None
        found = relay.events(since=since, instance_ids=ids, limit=limit)
        return {"events": versioned([e.to_json() for e in found])}


def serve(relay: Relay) -> None:
    """Serve on stdin/stdout until the client closes the connection."""
    build_server(relay).run("stdio")
