"""Column types of the instance store that SQLAlchemy does not ship."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator


def _utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("naive datetime given to the store; use timezone-aware UTC")
    return value.astimezone(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC in Python on every backend (SQLite keeps no zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = _utc(value)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)

    # SQLite: one function each way, not this type's step chained to DateTime's
    # (about 16 binds and 36 reads a follow-up); a UTC time's isoformat less its
    # "+00:00" (no replace() copy) is DateTime's text: stored values are unchanged.

    def bind_processor(self, dialect: Dialect) -> Any:
        if dialect.name != "sqlite":
            return super().bind_processor(dialect)

        # The last time bound and its text: a batch's rows bind the same few times
        # (its "now", its lease expiry) column after column. One tuple, replaced
        # whole, so that threads sharing the processor never pair a value with
        # another's text.
        last: list[tuple[datetime | None, str | None]] = [(None, None)]

        def to_text(value: datetime | None) -> str | None:
            if value is None:
                return None
            seen = last[0]
            if seen[0] == value:
                return seen[1]
            utc = value if value.tzinfo is UTC else _utc(value)
            text = utc.isoformat(" ", "microseconds")[:-6]
            last[0] = (value, text)
            return text

        return to_text

    def result_processor(self, dialect: Dialect, coltype: object) -> Any:
        if dialect.name != "sqlite":
            return super().result_processor(dialect, coltype)

        def from_text(value: str | None) -> datetime | None:
            # The zone parsed with the text: several times cheaper than replace().
            # Text relay did not write (a date alone, an offset) takes the long way.
            if value is None:
                return None
            try:
                parsed = datetime.fromisoformat(value + "+00:00")
            except ValueError:
                parsed = None
            if parsed is None or parsed.tzinfo is None:  # a date alone ignores the zone
                return datetime.fromisoformat(value).replace(tzinfo=UTC)
            return parsed

        return from_text
