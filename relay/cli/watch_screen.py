"""What ``relay watch`` draws: the columns that fit the terminal, one screenful of
rows, and a footer with the counts; and the view's state (scroll position,
filter, sort) that key presses change.

Kept apart from :mod:`relay.cli.watch_commands` (options, the refresh loop, the
keyboard) so the drawing can be tested at any width without a terminal.

At every width the columns are chosen by rank: state, contact name, next step
and objective are kept longest; the queue, the address, the age, the last
message and the id go first (in that order). Below the width where the full
state names fit, states take their short names (:data:`relay.core.states.SHORT_NAMES`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from relay.cli import render
from relay.core.forecasts import Forecast, Next
from relay.core.states import LIFECYCLE

if TYPE_CHECKING:
    from rich.console import Group

    from relay.api import WatchRow

#: Between columns (no borders: every column counts on a narrow terminal).
GAP = 2
#: The title, the header and the footer.
CHROME = 3


def age(moment: datetime | None, now: datetime, *, ahead: bool = False) -> str:
    """``3m``, ``2h``; ``in 3m`` for a moment ahead."""
    if moment is None:
        return ""
    seconds = int(abs((moment - now).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{'in ' if ahead else ''}{seconds // size}{unit}"
    return f"{'in ' if ahead else ''}{seconds}s"


def next_step(forecast: Forecast | None, now: datetime) -> str:
    """What comes next in a few words (``relay show`` says it in a sentence)."""
    if forecast is None:
        return "ended"
    when = forecast.at or forecast.until
    soon = "now" if forecast.due or when is None or when <= now else age(when, now, ahead=True)
    words = {
        Next.FIRST_MESSAGE: f"first msg {soon}",
        Next.FOLLOW_UP: f"follow-up {soon}",
        Next.REPLY: "agent reply now",
        Next.DELIVERY: "delivery",
        Next.ABANDON: f"abandon {soon}",
        Next.AWAIT_REPLY: "their reply",
        Next.QUEUED: "queued",
        Next.PAUSED: f"resume {soon}" if forecast.until else "paused",
        Next.PERSON: "a person",
        Next.APPROVAL: "approval",
    }
    return words[forecast.next]


def _contact(row: WatchRow) -> str:
    return row.contact_name or row.contact


def _last(row: WatchRow) -> str:
    if not row.last_message:
        return ""
    return ("← " if row.last_direction == "inbound" else "→ ") + row.last_message


@dataclass(frozen=True)
class Column:
    """A watch column. ``rank``: kept longer the higher it is; ``flex``: takes
    what the others leave, from ``least`` up to its content; the others show
    their content whole, up to ``most``."""

    name: str
    rank: int
    cell: Callable[[WatchRow, datetime, bool], Text | str]
    flex: bool = False
    least: int = 0
    most: int = 1000
    justify: str = "left"


COLUMNS: tuple[Column, ...] = (
    Column(
        "state", 10,
        lambda r, _n, short: render.state_text(
            r.state, "" if short or not r.previous_state else f" ({r.previous_state})",
            short=short,
        ),
    ),
    Column("id", 5, lambda r, _n, _s: r.id),
    Column("contact", 9, lambda r, _n, _s: _contact(r), most=16),
    Column("address", 2, lambda r, _n, _s: r.contact if r.contact_name else "", most=24),
    Column("next", 8, lambda r, now, _s: next_step(r.next, now), most=16),
    Column("objective", 7, lambda r, _n, _s: r.objective, flex=True, least=20),
    Column("last message", 4, lambda r, _n, _s: _last(r), flex=True, least=16),
    Column(
        "age", 3, lambda r, now, _s: age(r.last_message_at or r.updated_at, now), justify="right"
    ),
    Column("queue", 1, lambda r, _n, _s: str(r.queue_depth or ""), justify="right"),
)  # fmt: skip

#: The columns every width keeps when it can (the id: what a command needs to act).
ESSENTIAL = frozenset({"state", "id", "contact", "next", "objective"})


def _rank_key(row: WatchRow) -> tuple[int, str]:
    return (LIFECYCLE.index(row.state) if row.state in LIFECYCLE else len(LIFECYCLE), row.id)


def _due_key(row: WatchRow) -> tuple[int, str]:
    moment = (row.next.at or row.next.until) if row.next else None
    if row.next is None:
        return (2, "")
    return (0 if row.next.due or moment else 1, moment.isoformat() if moment else "")


#: The orders ``s`` goes through: name and key (None: as the store gave them,
#: needs-you first then the latest changed).
SORTS: tuple[tuple[str, Callable[[WatchRow], Any] | None], ...] = (
    ("needs you", None),
    ("next due", _due_key),
    ("state", _rank_key),
    ("contact", lambda r: (_contact(r).casefold(), r.id)),
    ("oldest", lambda r: (r.updated_at, r.id)),
)


@dataclass
class View:
    """Where the operator is: the first row shown, the filter, the sort."""

    offset: int = 0
    query: str = ""
    typing: bool = False
    sort: int = 0
    rows: list[WatchRow] = field(default_factory=list)

    def shown(self) -> list[WatchRow]:
        """The rows that pass the filter, in the chosen order."""
        rows = [r for r in self.rows if matches(r, self.query)] if self.query else list(self.rows)
        key = SORTS[self.sort][1]
        return sorted(rows, key=key) if key else rows

    def press(self, key: str, page: int) -> bool:
        """Act on one key; False when it asks to quit."""
        if self.typing:
            self._type(key)
            return True
        total = len(self.shown())
        moves = {
            "up": -1, "k": -1, "down": 1, "j": 1, "pgup": -page, "pgdn": page, " ": page,
            "home": -total, "g": -total, "end": total, "G": total,
        }  # fmt: skip
        if key in ("q", "Q", "ctrl-c"):
            return False
        if key in moves:
            self.offset += moves[key]
        elif key == "/":
            self.typing, self.offset = True, 0
        elif key == "s":
            self.sort, self.offset = (self.sort + 1) % len(SORTS), 0
        elif key == "esc":
            self.query, self.offset = "", 0
        self.clamp(page)
        return True

    def _type(self, key: str) -> None:
        if key == "enter":
            self.typing = False
        elif key == "esc":
            self.typing, self.query = False, ""
        elif key == "backspace":
            self.query = self.query[:-1]
        elif len(key) == 1 and key.isprintable():
            self.query += key
        self.offset = 0

    def clamp(self, page: int) -> None:
        """Keep the last screen full: never scroll past the last row."""
        self.offset = max(0, min(self.offset, len(self.shown()) - max(page, 1)))


def matches(row: WatchRow, query: str) -> bool:
    """Whether ``query`` (any case) appears in the row's id, state, contact, name,
    campaign, objective or last message: one field holds it whole."""
    fields = (row.id, row.state, row.contact, row.contact_name, row.campaign,
              row.objective, row.last_message)  # fmt: skip
    wanted = query.casefold()
    return any(wanted in value.casefold() for value in fields if value)


def page_size(height: int) -> int:
    """Rows of conversations a screen of ``height`` lines holds."""
    return max(1, height - CHROME)


def layout(
    rows: Sequence[WatchRow], now: datetime, width: int
) -> tuple[list[Column], list[int], list[list[Text]]]:
    """The columns shown at ``width``, their widths and the cells: full state
    names where they cost no column (the essential ones least of all), short
    names where those make room for more."""
    full = _fit(rows, now, width, short=False)
    short = _fit(rows, now, width, short=True)

    def worth(fitted: tuple[list[Column], list[int], list[list[Text]]]) -> tuple[bool, int]:
        names = {c.name for c in fitted[0]}
        return names >= ESSENTIAL, len(names)

    return full if worth(full) >= worth(short) else short


def _fit(
    rows: Sequence[WatchRow], now: datetime, width: int, short: bool
) -> tuple[list[Column], list[int], list[list[Text]]]:
    table = [[render.cell(c.cell(r, now, short)) for c in COLUMNS] for r in rows]
    content = [
        min(column.most, max([len(column.name), *(row[i].cell_len for row in table)]))
        for i, column in enumerate(COLUMNS)
    ]
    need = [min(content[i], c.least) if c.flex else content[i] for i, c in enumerate(COLUMNS)]
    # A column no row has anything in (no names, no queue) is left out first.
    keep = [i for i, _ in enumerate(COLUMNS) if any(row[i].plain for row in table)]
    while len(keep) > 1 and sum(need[i] for i in keep) + GAP * (len(keep) - 1) > width:
        keep.remove(min(keep, key=lambda i: COLUMNS[i].rank))
    widths = {i: need[i] for i in keep}
    room = width - sum(widths.values()) - GAP * (len(keep) - 1)
    flexible = sorted((i for i in keep if COLUMNS[i].flex), key=lambda i: content[i])
    for index, i in enumerate(flexible):
        share = room // (len(flexible) - index)
        extra = max(0, min(content[i] - widths[i], share))
        widths[i] += extra
        room -= extra
    chosen = [COLUMNS[i] for i in keep]
    return chosen, [widths[i] for i in keep], [[row[i] for i in keep] for row in table]


def draw(view: View, now: datetime, width: int, height: int, *, limit: int) -> Group:
    """One screen: the title, a page of rows from ``view.offset``, the footer."""
    from rich.console import Group  # the screen only: read commands never load it

    shown = view.shown()
    page = page_size(height)
    view.clamp(page)
    visible = shown[view.offset : view.offset + page]
    bottom = _line(footer(view, shown, page, limit=limit), width)
    if not visible:
        return Group(_line(title(now), width, "bold"), _line(empty(view), width),
                     *_filler(page), bottom)  # fmt: skip
    columns, widths, cells = layout(visible, now, width)
    table = Table(
        box=None, padding=(0, GAP // 2), pad_edge=False, show_edge=False, expand=False,
        header_style="bold reverse",
    )  # fmt: skip
    for column, size in zip(columns, widths, strict=True):
        table.add_column(
            column.name, width=size, no_wrap=True, overflow="ellipsis",
            justify=column.justify,  # type: ignore[arg-type]
        )  # fmt: skip
    for row in cells:
        table.add_row(*row)
    return Group(_line(title(now), width, "bold"), table, *_filler(page - len(visible)),
                 bottom)  # fmt: skip


def empty(view: View) -> str:
    """What an empty screen says instead of an empty table."""
    if view.query:
        return f"No conversation matches {view.query!r} (Esc clears the filter)."
    return "No conversations to watch (--all includes finished ones)."


def _line(text: str, width: int, style: str = "") -> Text:
    line = Text(render.clean(text), style=style, no_wrap=True, overflow="ellipsis")
    line.truncate(width, overflow="ellipsis")
    return line


def _filler(lines: int) -> list[Text]:
    return [Text("") for _ in range(max(0, lines))]


def title(now: datetime) -> str:
    return f"relay watch · {render.when(now)} · ↑↓ PgUp PgDn · / filter · s sort · q quit"


def footer(view: View, shown: Sequence[WatchRow], page: int, *, limit: int) -> str:
    """Where the screen is in the list, what the filter and sort are, and the counts."""
    total = len(shown)
    first, last = (view.offset + 1, min(total, view.offset + page)) if total else (0, 0)
    more = total - last
    parts = [f"{first}-{last} of {total}", f"{more} more" if more else "end"]
    parts.append(counts(shown))
    if view.typing or view.query:
        typing = "▏ (Enter keeps, Esc clears)" if view.typing else ""
        parts.append(f"filter: {view.query}{typing}")
    parts.append(f"sort: {SORTS[view.sort][0]}")
    if len(view.rows) >= limit:
        parts.append(f"stopped at --limit {limit}")
    return " · ".join(parts)


def counts(rows: Sequence[WatchRow]) -> str:
    """How many rows in each state family (``3 needs you, 40 waiting``)."""
    tally: dict[str, int] = {}
    for row in rows:
        name = render.family(row.state)
        tally[name] = tally.get(name, 0) + 1
    return ", ".join(f"{tally[name]} {name}" for name in render.FAMILIES if name in tally) or (
        "no conversations"
    )


def plain_rows(rows: Sequence[WatchRow], now: datetime) -> list[list[Any]]:
    """Every column, full state names, for the piped form (one tab-separated line each)."""
    return [[c.cell(r, now, False) for c in COLUMNS] for r in rows]
