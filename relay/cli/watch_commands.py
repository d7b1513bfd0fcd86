"""``relay watch``: a live, full-screen table of conversations.

On a terminal it is a Rich ``Live`` screen redrawn from the store every
``--interval`` (two queries in one read transaction per refresh) and at each
key press, with the conversations that need a human at the top; the keys
scroll, filter and sort (:mod:`relay.cli.watch_screen` draws, :mod:`relay.cli.keys`
reads them); ``q`` or Ctrl-C quits and gives the terminal back as it was. With
stdin not a terminal the screen only refreshes. Piped, it prints the table every
interval instead (``--count`` stops after that many).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from relay.cli import keys, render, watch_screen
from relay.cli.session import state
from relay.core.durations import parse_duration
from relay.core.states import NEEDS_PERSON, values

if TYPE_CHECKING:
    from relay.api import WatchRow


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
    limit: Annotated[
        int, typer.Option(help="At most this many conversations (scroll through them).")
    ] = 1000,
    count: Annotated[
        int, typer.Option(help="Stop after this many refreshes (0: until q or Ctrl-C).")
    ] = 0,
) -> None:
    """Watch conversations live: state, contact, next step, objective, last message and
    its age, queue depth; needs-human first.

    Keys: arrows, PgUp/PgDn, Home/End scroll; / filters (Enter keeps, Esc clears);
    s changes the order; q or Ctrl-C quits. Piped, it prints every row instead."""
    every = max(0.2, parse_duration(interval).total_seconds())
    filters: dict[str, Any] = {
        "state": state_filter, "contact": contact, "campaign": campaign,
        "finished": finished, "limit": limit,
    }  # fmt: skip
    state.relay().watch(**filters)  # bad filters fail here, before the screen changes
    with contextlib.suppress(KeyboardInterrupt):
        if sys.stdout.isatty():
            _live(filters, every, count, keyboard=sys.stdin.isatty())
        else:
            _plain(filters, every, count)


def _title(rows: list[WatchRow], now: datetime, limit: int) -> str:
    waiting = sum(r.state in values(NEEDS_PERSON) for r in rows)
    more = f" (stopped at --limit {limit})" if len(rows) >= limit else ""
    return (
        f"relay watch · {len(rows)} conversation(s){more} · {waiting} need you · {render.when(now)}"
    )


def _plain(filters: dict[str, Any], every: float, count: int) -> None:
    shown = 0
    while True:
        relay = state.relay()
        rows, now = relay.watch(**filters), relay.now()
        render.line(_title(rows, now, filters["limit"]))
        names = [c.name for c in watch_screen.COLUMNS]
        render.table(None, names, watch_screen.plain_rows(rows, now))
        sys.stdout.flush()
        shown += 1
        if count and shown >= count:
            return
        time.sleep(every)


def _live(filters: dict[str, Any], every: float, count: int, *, keyboard: bool) -> None:
    """The full screen, redrawn from the store every ``every`` seconds and at each
    key press; without a keyboard (stdin not a terminal) it only refreshes."""
    from rich.live import Live

    console = render.console()
    view = watch_screen.View()
    fetched = 0
    with (
        keys.cbreak() if keyboard else contextlib.nullcontext(_no_keys) as read,
        Live(console=console, screen=True, auto_refresh=False) as live,
    ):
        due = 0.0
        while True:
            if time.monotonic() >= due:
                if count and fetched >= count:
                    return
                relay = state.relay()
                view.rows, now = relay.watch(**filters), relay.now()
                fetched += 1
                due = time.monotonic() + every
            width, height = _screen_size(console)
            live.update(
                watch_screen.draw(view, now, width, height, limit=filters["limit"]), refresh=True
            )
            page = watch_screen.page_size(height)
            for key in read(max(0.0, due - time.monotonic())):
                if not view.press(key, page):
                    return


def _screen_size(console: Any) -> tuple[int, int]:
    """The terminal's size now (it may have been resized): the screen must fit it,
    whatever a stale COLUMNS in the environment says."""
    try:
        size = os.get_terminal_size(sys.stdout.fileno())
    except OSError:
        return console.size
    console.size = (size.columns, size.lines)
    return size.columns, size.lines


def _no_keys(timeout: float) -> list[str]:
    """No keyboard: wait for the next refresh."""
    time.sleep(timeout)
    return []


def register(app: typer.Typer) -> None:
    app.command()(watch)
