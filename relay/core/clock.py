"""The one source of "now"; tests pass a settable clock instead of sleeping."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """Return the current time, timezone-aware UTC."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


def ensure_utc(value: datetime) -> datetime:
    """Normalise an aware datetime to UTC; a naive one is taken to be UTC already."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def readable(value: datetime) -> str:
    """The one form people read a time in, everywhere (``2026-03-01 09:30:00Z``):
    UTC to the second, a space for the ISO ``T``."""
    return (isoformat(value.replace(microsecond=0)) or "").replace("T", " ")


def isoformat(value: datetime | None) -> str | None:
    """ISO 8601 UTC with a ``Z`` suffix, the form every --json output uses."""
    if value is None:
        return None
    return ensure_utc(value).isoformat().replace("+00:00", "Z")
