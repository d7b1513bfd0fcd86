"""Commands for a program that drives relay: result, events, wait."""

from __future__ import annotations

import sys
import time
from datetime import timedelta
from typing import TYPE_CHECKING, Annotated

import typer

from relay.cli import render
from relay.cli.session import JsonOption, state
from relay.core.states import SUCCEEDED, values

if TYPE_CHECKING:
    from relay.api import EventView, ResultView

WAIT_HELP = """Wait until a condition holds for the conversations IDS, reading the store
(cheap for hours; works with the daemon on another machine over PostgreSQL).

Conditions (--for): done (every one ended), reply (the contact wrote, after --since or
after the wait began), answer (every required todo answered), needs-human.

Before and while it waits it checks whether work is due with no daemon alive to do
it: then it warns at once on stderr (and in the JSON's warnings), and with
--require-daemon it stops with exit code 6 instead of waiting. On a terminal it shows
what it waits for and for how long.

Exit codes: 0 the condition holds; 3 a conversation needs a human (and you waited for
something else); 4 timed out; 5 they ended without the condition; 6 work is due and no
daemon is running (--require-daemon); 2 unknown id or bad input."""


def result(
    instance_id: Annotated[str, typer.Argument(metavar="ID", help="Instance id or unique prefix.")],
    json_out: JsonOption = False,
) -> None:
    """Each todo with its status, its answer and the message it came from (final once
    the conversation has ended)."""
    view = state.relay().result(instance_id)
    if json_out:
        render.emit_json(view.to_json())
        return
    _print_result(view)


def _print_result(view: ResultView) -> None:
    final = "final" if view.final else "so far"
    render.line(f"{view.id} {view.state} ({final}; contact {view.contact})")
    render.table(
        "result",
        ["#", "status", "kind", "answer", "from message"],
        (
            [
                t.todo.id,
                t.todo.status,
                t.todo.answer_kind + ("" if t.todo.required else "?"),
                render.answer(t.todo.answer) if t.todo.answered else "-",
                f"{t.message.id}: {t.message.text}" if t.message else "-",
            ]
            for t in view.todos
        ),
    )
    if view.missing_answers and view.state in values(SUCCEEDED):
        missing = ", ".join(str(i) for i in view.missing_answers)
        render.warn(f"completed without the answers of required todo(s) {missing}")
    for error in view.schema_errors:
        render.warn(f"result schema: {error}")


def events(
    since: Annotated[
        str | None,
        typer.Option("--since", help="Only events after this cursor (each event gives its own)."),
    ] = None,
    instance: Annotated[
        list[str] | None,
        typer.Option("--instance", "-i", help="Only this conversation's events; repeatable."),
    ] = None,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new events as they commit.")
    ] = False,
    limit: Annotated[int, typer.Option(help="At most this many (without --follow).")] = 1000,
    json_out: Annotated[
        bool, typer.Option("--json", help="One JSON object per line (JSON Lines).")
    ] = False,
) -> None:
    """Every state change, message in and out, answer and operator command, in commit
    order, each with a cursor: resume with --since CURSOR and nothing is missed or
    repeated."""
    relay = state.relay()
    cursor = since
    delay = 0.1
    while True:
        found = relay.events(since=cursor, instance_ids=instance or None, limit=limit)
        for event in found:
            _print_event(event, json_out)
        if found:
            cursor = str(found[-1].id)
            delay = 0.1
        if not follow:
            return
        time.sleep(delay)
        delay = min(2.0, delay * 1.5)


def _print_event(event: EventView, json_out: bool) -> None:
    if json_out:
        render.emit_json_line(event.to_json())
        return
    details = render.arguments(event.data)
    meta = f" meta: {render.arguments(event.meta)}" if event.meta else ""
    who = f" by {event.actor}" if event.actor else ""
    render.line(
        f"{event.id}\t{render.when(event.at)}\t{event.instance_id or '-'}\t"
        f"{event.kind}{who}\t{details}{meta}"
    )


def wait(
    instance_ids: Annotated[list[str], typer.Argument(metavar="IDS...", help="Instance ids.")],
    until: Annotated[
        str,
        typer.Option("--for", help="done | reply | answer | needs-human"),
    ] = "done",
    timeout: Annotated[
        str | None, typer.Option(help="Give up after this long: 90s, 30m, 2h (default: never).")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", help="For --for reply: count replies after this event cursor."),
    ] = None,
    require_daemon: Annotated[
        bool,
        typer.Option(
            "--require-daemon",
            help="Exit with code 6 at once when work is due and no daemon is running.",
        ),
    ] = False,
    json_out: JsonOption = False,
) -> None:
    progress = _Progress(instance_ids, until, timeout) if render.stderr_is_terminal() else None
    outcome = state.relay().wait(
        instance_ids,
        until=until,
        timeout=timeout,
        since=since,
        require_daemon=require_daemon,
        on_warning=progress.warn if progress else render.warn,
        on_poll=progress.show if progress else None,
    )
    if progress:
        progress.done()
    if json_out:
        render.emit_json(outcome.to_json())
    else:
        states = ", ".join(f"{v.id} {v.state}" for v in outcome.instances)
        what = until if outcome.outcome == "met" else outcome.outcome.replace("_", " ")
        render.line(f"{what}: {states} (cursor {outcome.cursor})")
    raise typer.Exit(outcome.exit_code)


wait.__doc__ = WAIT_HELP


class _Progress:
    """One line on a terminal's stderr, rewritten while ``relay wait`` waits: what
    for, on which conversations, for how long so far and at most."""

    def __init__(self, ids: list[str], until: str, timeout: str | None) -> None:
        self.what = f"waiting for {until} on {', '.join(ids)}"
        self.limit = f" of {timeout}" if timeout else ""
        self.shown = False

    def show(self, waited: float) -> None:
        from relay.core.durations import format_duration

        spent = format_duration(timedelta(seconds=int(waited)))
        sys.stderr.write(f"\r\x1b[K{self.what}: {spent}{self.limit} (Ctrl-C stops)")
        sys.stderr.flush()
        self.shown = True

    def warn(self, message: str) -> None:
        self.done()
        render.warn(message)

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            self.shown = False


def mcp(
    http: Annotated[
        bool,
        typer.Option(
            "--http",
            help="Serve the Streamable HTTP transport instead of stdio; every request needs "
            "the bearer token in the variable [mcp] token_env names (RELAY_MCP_TOKEN).",
        ),
    ] = False,
    host: Annotated[
        str | None, typer.Option(help="With --http: the address to bind (default: [mcp] host).")
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(help="With --http: the port (default: [mcp] port; 0: any free one)."),
    ] = None,
) -> None:
    """Serve relay's verbs as MCP tools (start, status, show, transcript, result, wait,
    send, pause, resume, cancel, events, drafts, approve, reject): on stdin/stdout, or
    with --http over Streamable HTTP on loopback. Needs relay-outreach[mcp]."""
    state.relay().serve_mcp(http=http, host=host, port=port)


def register(app: typer.Typer) -> None:
    app.command()(result)
    app.command()(events)
    app.command()(wait)
    app.command()(mcp)
