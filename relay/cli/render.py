"""Output: Rich tables on a terminal, plain tab-separated text when piped, JSON on request.

Rendering lives here so command modules only parse arguments and call the API.
Contact-controlled text (messages, reasons, objectives) reaches the operator's
terminal, so every human-readable path goes through :func:`clean`: control
characters and escape sequences are shown as ``\\x1b`` instead of being
obeyed, and Rich never reads markup in it. ``--json`` escapes them itself.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from relay.core.clock import readable
from relay.core.jsonshape import versioned
from relay.core.secrets import mask_text
from relay.core.states import FAMILIES as STATE_FAMILIES
from relay.core.states import SHORT_NAMES, values

if TYPE_CHECKING:
    from rich.console import Console

_console: Console | None = None


# C0 controls but newline and tab, DEL, C1 controls (0x9b is a one-byte CSI),
# and the bidirectional overrides that make text read differently than it is.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def clean(text: str) -> str:
    """Text safe to print on a terminal: every control character is shown as an
    escape (``\\x1b``), so an ESC, OSC or CSI sequence is visible, never obeyed."""
    return _CONTROL.sub(_visible, text)


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def console() -> Console:
    global _console
    if _console is None:
        # Imported on first use: --json and piped output never build a console.
        from rich.console import Console

        _console = Console(no_color=bool(os.environ.get("NO_COLOR")), highlight=False)
    return _console


def is_terminal() -> bool:
    return sys.stdout.isatty()


def emit_json(data: Any) -> None:
    # ensure_ascii: control characters (and everything non-ASCII) leave as \u escapes.
    sys.stdout.write(
        json.dumps(versioned(data), indent=2, sort_keys=False, default=str, ensure_ascii=True)
        + "\n"
    )


def emit_json_line(data: Any) -> None:
    """One JSON document on one line (JSON Lines: ``relay events --json``), flushed."""
    sys.stdout.write(json.dumps(versioned(data), default=str, ensure_ascii=True) + "\n")
    sys.stdout.flush()


def line(text: str = "") -> None:
    text = clean(text)
    if is_terminal():
        console().print(Text(text), markup=False, highlight=False)
    else:
        sys.stdout.write(text + "\n")


def when(value: datetime | None) -> str:
    if value is None:
        return "-"
    return readable(value)


def ago(value: datetime | None, now: datetime | None = None) -> str:
    if value is None:
        return "-"
    now = now or datetime.now(UTC)
    seconds = int((value - now).total_seconds())
    suffix = "from now" if seconds > 0 else "ago"
    seconds = abs(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} {suffix}"
    return f"{seconds}s {suffix}"


#: State families, each with its colour (``NO_COLOR`` turns colour off).
FAMILIES: dict[str, tuple[str, frozenset[str]]] = {
    name: (colour, values(STATE_FAMILIES[name]))
    for name, colour in (
        ("live", "green"),
        ("waiting", "cyan"),
        ("needs you", "bold magenta"),
        ("done", "blue"),
        ("failed", "bold red"),
    )
}


def family(state_name: str) -> str:
    """``live``, ``waiting``, ``needs you``, ``done`` or ``failed``."""
    for name, (_style, members) in FAMILIES.items():
        if state_name in members:
            return name
    return "live"


def state_text(state_name: str, suffix: str = "", *, short: bool = False) -> Text:
    """A state in its family's colour (plain where colour is off); ``short``: its
    narrow-column name (:data:`relay.core.states.SHORT_NAMES`)."""
    shown = SHORT_NAMES.get(state_name, state_name) if short else state_name
    return Text(clean(shown) + clean(suffix), style=FAMILIES[family(state_name)][0])


@dataclass(frozen=True)
class Col:
    """A table column. ``key`` (ids, states, times) never wraps or shortens;
    ``text`` stays on one line and ends with an ellipsis when the terminal is
    too narrow; ``wrap`` wraps at words (message bodies)."""

    name: str
    kind: str = "key"
    justify: str = "left"
    #: Left out (first the last such column) when the terminal is too narrow
    #: for every ``key`` column to show whole.
    optional: bool = False


def cell(value: Any) -> Text:
    if isinstance(value, Text):
        return value  # built here (state_text, bars) from text already cleaned
    return Text("-" if value is None else clean(str(value)))  # Text: no markup


def _widths(specs: Sequence[Col], rows: Sequence[Sequence[Text]], total: int) -> list[int]:
    """Column widths: ``key`` columns get their content's width; the others share
    what is left, none wider than its content (``max_width`` in Rich terms)."""
    widest = [max([len(c.name), *(row[i].cell_len for row in rows)]) for i, c in enumerate(specs)]
    widths = list(widest)
    flexible = [i for i, c in enumerate(specs) if c.kind != "key"]
    # Each column costs its padding (2) and a border (1); the table one more border.
    room = (
        total - 1 - 3 * len(specs) - sum(widest[i] for i, c in enumerate(specs) if c.kind == "key")
    )
    pending = sorted(flexible, key=lambda i: widest[i])
    while pending:
        share = max(room // len(pending), 8)
        index = pending.pop(0)
        widths[index] = min(widest[index], share)
        room -= widths[index]
    return widths


def table(
    title: str | None,
    columns: Sequence[str | Col],
    rows: Iterable[Sequence[Any]],
    *,
    empty: str | None = None,
) -> None:
    """A table: Rich on a terminal; a header plus tab-separated rows when piped.

    Columns are sized to their content: ids and states never wrap, long text is
    cut with an ellipsis (see :class:`Col`; a plain name is a ``key`` column).
    With no rows a terminal gets the sentence ``empty`` instead of an empty table
    (piped, the header alone: a reader counts no rows).
    """
    specs = [c if isinstance(c, Col) else Col(c) for c in columns]
    materialised = [[cell(c) for c in row] for row in rows]
    if not materialised and is_terminal():
        line(empty or f"No {title or 'rows'}.")
        return
    if not is_terminal():
        sys.stdout.write("\t".join(c.name for c in specs) + "\n")
        for row in materialised:
            sys.stdout.write("\t".join(cell.plain.replace("\t", " ") for cell in row) + "\n")
        return
    console().print(rich_table(title, specs, materialised))


def _fit(
    specs: Sequence[Col], rows: Sequence[Sequence[Text]], total: int
) -> tuple[Sequence[Col], Sequence[Sequence[Text]]]:
    """Drop optional columns, last first, until the whole ``key`` columns and a
    little of each other column fit in ``total``."""
    keep = list(range(len(specs)))

    def needed() -> int:
        width = 1
        for i in keep:
            column = specs[i]
            content = max([len(column.name), *(row[i].cell_len for row in rows)])
            width += 3 + (content if column.kind == "key" else min(content, 8))
        return width

    while needed() > total:
        optional = [i for i in keep if specs[i].optional]
        if not optional:
            break
        keep.remove(optional[-1])
    return [specs[i] for i in keep], [[row[i] for i in keep] for row in rows]


def fits(columns: Sequence[str | Col], rows: Iterable[Sequence[Any]], *, least: int = 24) -> bool:
    """Whether a table of these rows fits the terminal with its ``key`` columns whole
    and every other column at least ``least`` wide (or as wide as its content):
    when not, a command prints its rows another way rather than fold words."""
    specs = [c if isinstance(c, Col) else Col(c) for c in columns]
    cells = [[cell(c) for c in row] for row in rows]
    width = 1
    for i, column in enumerate(specs):
        content = max([len(column.name), *(row[i].cell_len for row in cells)])
        width += 3 + (content if column.kind == "key" else min(content, least))
    return width <= console().width


def styled(text: Text) -> None:
    """One line built of :class:`Text` pieces (colours kept); wraps at words."""
    if is_terminal():
        console().print(text)
    else:
        sys.stdout.write(text.plain + "\n")


def rich_table(title: str | None, specs: Sequence[Col], rows: Sequence[Sequence[Text]]) -> Table:
    """The Rich table :func:`table` prints (``relay watch`` draws it live)."""
    specs, rows = _fit(specs, rows, console().width)
    built = Table(title=title, show_lines=False, header_style="bold", expand=False)
    for column, width in zip(specs, _widths(specs, rows, console().width), strict=True):
        built.add_column(
            column.name,
            width=width,
            no_wrap=column.kind != "wrap",
            overflow="fold" if column.kind == "wrap" else "ellipsis",
            justify=column.justify,  # type: ignore[arg-type]
        )
    for row in rows:
        built.add_row(*row)
    return built


def fields(pairs: Iterable[tuple[str, Any]]) -> None:
    """Aligned ``key: value`` lines (for ``show``); a :class:`Text` value keeps its colour."""
    materialised = [(k, "-" if v is None else v) for k, v in pairs]
    width = max((len(k) for k, _ in materialised), default=0)
    for key, value in materialised:
        if isinstance(value, Text) and is_terminal():
            console().print(Text(f"{key.ljust(width)}  ") + cell(value))
        else:
            line(f"{key.ljust(width)}  {value.plain if isinstance(value, Text) else value}")


def error(message: str) -> None:
    sys.stderr.write(f"relay: error: {clean(mask_text(message))}\n")


def stderr_is_terminal() -> bool:
    """Whether a person watches stderr (progress lines go there, never to stdout)."""
    return sys.stderr.isatty() and os.environ.get("TERM") != "dumb"


def note(message: str) -> None:
    """A sentence about the output (it stopped at a limit): under it on a terminal;
    on stderr when piped, so the rows a reader parses stay rows."""
    if is_terminal():
        console().print(Text(clean(message), style="dim"))
    else:
        sys.stderr.write(f"relay: {clean(message)}\n")


def warn(message: str) -> None:
    sys.stderr.write(f"relay: warning: {clean(mask_text(message))}\n")


def answer(value: Any) -> str:
    """An answer as one short line: yes/no for booleans, JSON for structures."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def arguments(args: dict[str, Any]) -> str:
    """An audited command's arguments as ``key=value`` pairs."""
    return " ".join(f"{key}={answer(value)}" for key, value in args.items())
