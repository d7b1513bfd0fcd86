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
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from relay.core.clock import isoformat
from relay.core.jsonshape import versioned
from relay.core.secrets import mask_text

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
    return (isoformat(value.replace(microsecond=0)) or "-").replace("T", " ")


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


def table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """A table: Rich on a terminal; a header plus tab-separated rows when piped."""
    materialised = [[("-" if c is None else clean(str(c))) for c in row] for row in rows]
    if not is_terminal():
        sys.stdout.write("\t".join(columns) + "\n")
        for row in materialised:
            sys.stdout.write("\t".join(cell.replace("\t", " ") for cell in row) + "\n")
        return
    rich_table = Table(title=title, show_lines=False, header_style="bold")
    for column in columns:
        rich_table.add_column(column, overflow="fold")
    for row in materialised:
        rich_table.add_row(*(Text(cell) for cell in row))  # Text: no markup
    console().print(rich_table)


def fields(pairs: Iterable[tuple[str, Any]]) -> None:
    """Aligned ``key: value`` lines (for ``show``)."""
    materialised = [(k, "-" if v is None else str(v)) for k, v in pairs]
    width = max((len(k) for k, _ in materialised), default=0)
    for key, value in materialised:
        line(f"{key.ljust(width)}  {value}")


def error(message: str) -> None:
    sys.stderr.write(f"relay: error: {clean(mask_text(message))}\n")


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
