"""``relay watch``: a live, full-screen table of conversations.

On a terminal it is a Rich ``Live`` screen redrawn from the store every
``--interval`` (two queries in one read transaction per refresh), with the
conversations that need a human at the top; ``q`` or Ctrl-C quits and gives
the terminal back as it was. Piped, it prints the table every interval
instead (``--count`` stops after that many).
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from relay.cli import render
from relay.cli.session import state
from relay.core.durations import parse_duration
from relay.core.states import NEEDS_PERSON, values

if TYPE_CHECKING:
    from relay.api import WatchRow

COLUMNS = (
    render.Col("state"),
    render.Col("id"),
    render.Col("contact"),
    render.Col("objective", "text"),
    render.Col("last message", "text"),
    render.Col("age", justify="right"),
    render.Col("heartbeat", justify="right", optional=True),
    render.Col("queue", justify="right", optional=True),
)


def watch(
    state_filter: Annotated[
        str | None, typer.Option("--state", "-s", help="Only conversations in this state.")
    ] = None,
    contact: Annotated[str | None, typer.Option(help="Only this contact's conversations.")] = None,
    campaign: Annotated[str | None, typer.Option(help="Only this campaign.")] = None,
    finished: Annotated[
        bool, typer.Option("--all", help="Include finished conversations too.")
    ] = False,
    interval: Annotated[str, typer.Option(help="Time between refreshes: 2s, 1m.")] = "2s",
    limit: Annotated[int, typer.Option(help="At most this many rows.")] = 100,
    count: Annotated[
        int, typer.Option(help="Stop after this many refreshes (0: until q or Ctrl-C).")
    ] = 0,
) -> None:
    """Watch conversations live: state, contact, objective, last message and its age,
    next heartbeat, queue depth; needs-human first. q or Ctrl-C quits."""
    every = max(0.2, parse_duration(interval).total_seconds())
    filters: dict[str, Any] = {
        "state": state_filter, "contact": contact, "campaign": campaign,
        "finished": finished, "limit": limit,
    }  # fmt: skip
    state.relay().watch(**filters)  # bad filters fail here, before the screen changes
    with contextlib.suppress(KeyboardInterrupt):
        if sys.stdout.isatty() and sys.stdin.isatty():
            _live(filters, every, count)
        else:
            _plain(filters, every, count)


def _rows(rows: list[WatchRow], now: datetime) -> list[list[Any]]:
    return [
        [
            render.state_text(r.state, f" ({r.previous_state})" if r.previous_state else ""),
            r.id,
            r.contact,
            r.objective,
            (("← " if r.last_direction == "inbound" else "→ ") + r.last_message)
            if r.last_message
            else "",
            _age(r.last_message_at or r.updated_at, now),
            _age(r.next_heartbeat_at, now, ahead=True) if r.next_heartbeat_at else "",
            r.queue_depth or "",
        ]
        for r in rows
    ]


def _age(moment: datetime | None, now: datetime, *, ahead: bool = False) -> str:
    if moment is None:
        return ""
    seconds = int(abs((moment - now).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{'in ' if ahead else ''}{seconds // size}{unit}"
    return f"{'in ' if ahead else ''}{seconds}s"


def _title(rows: list[WatchRow], now: datetime) -> str:
    waiting = sum(r.state in values(NEEDS_PERSON) for r in rows)
    stamp = render.when(now)
    return f"relay watch · {len(rows)} conversation(s) · {waiting} need you · {stamp} · q quits"


def _plain(filters: dict[str, Any], every: float, count: int) -> None:
    shown = 0
    while True:
        relay = state.relay()
        rows, now = relay.watch(**filters), relay.now()
        render.line(_title(rows, now))
        render.table(None, COLUMNS, _rows(rows, now))
        sys.stdout.flush()
        shown += 1
        if count and shown >= count:
            return
        time.sleep(every)


def _live(filters: dict[str, Any], every: float, count: int) -> None:
    from rich.console import Group
    from rich.live import Live

    console = render.console()
    shown = 0
    with _keys() as pressed, Live(console=console, screen=True, auto_refresh=False) as live:
        while True:
            relay = state.relay()
            rows, now = relay.watch(**filters), relay.now()
            cells = [
                [c if isinstance(c, Text) else render.cell(c) for c in row]
                for row in _rows(rows, now)
            ]
            table = render.rich_table(None, COLUMNS, cells)
            live.update(Group(Text(_title(rows, now), style="bold"), table), refresh=True)
            shown += 1
            if (count and shown >= count) or pressed(every) == "q":
                return


@contextlib.contextmanager
def _keys() -> Iterator[Any]:
    """Read single keys without Enter (the terminal is restored on the way out)."""
    import termios
    import tty

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setcbreak(fd, termios.TCSANOW)  # keep keys typed before the screen came up

    def pressed(timeout: float) -> str | None:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                key = os.read(fd, 1).decode(errors="replace").lower()
                if key == "q":
                    return key
        return None

    try:
        yield pressed
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def register(app: typer.Typer) -> None:
    app.command()(watch)
