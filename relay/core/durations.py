"""Durations as people type them (``90s``, ``30m``, ``2h``, ``1d``, ``1h30m``)."""

from __future__ import annotations

import re
from datetime import timedelta

from relay.core.errors import InvalidInput

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# Ten years: beyond any sensible heartbeat or pause, and well inside the 32-bit
# seconds columns and timedelta's range.
MAX_SECONDS = 10 * 365 * 86400
_PART = re.compile(r"(\d+)\s*([smhdw])", re.ASCII)


def parse_duration(text: str) -> timedelta:
    """Parse ``text`` into a positive timedelta; a bare number means seconds."""
    cleaned = text.strip().lower()
    if cleaned.isascii() and cleaned.isdigit():
        seconds = int(cleaned)
    else:
        pos, seconds = 0, 0
        for match in _PART.finditer(cleaned):
            if cleaned[pos : match.start()].strip():
                break
            seconds += int(match.group(1)) * _UNITS[match.group(2)]
            pos = match.end()
        if pos == 0 or cleaned[pos:].strip():
            raise InvalidInput(f"invalid duration {text!r}: use forms like 90s, 30m, 2h, 1d")
    if seconds <= 0:
        raise InvalidInput(f"invalid duration {text!r}: must be greater than zero")
    if seconds > MAX_SECONDS:
        raise InvalidInput(f"invalid duration {text!r}: must be at most 3650d")
    return timedelta(seconds=seconds)


def format_duration(delta: timedelta) -> str:
    """Render a timedelta compactly (``1h30m``); the inverse of :func:`parse_duration`."""
    total = int(delta.total_seconds())
    if total <= 0:
        return "0s"
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, total = divmod(total, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)
