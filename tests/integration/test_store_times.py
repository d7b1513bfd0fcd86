"""Times in the store: aware UTC in Python on both databases, and on SQLite the
text SQLAlchemy's DateTime writes (SQL compares these strings, so the format of
rows written before and after must be the same)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import DateTime, insert, select, text

from relay.store.database import make_engine
from relay.store.models import EventRow, table_of
from relay.store.opening import open_store

TIMES = [
    datetime(2026, 11, 23, 6, 50, 30, tzinfo=UTC),
    datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=timezone(timedelta(hours=5))),
    datetime(2026, 3, 29, 1, 0, 0, 1, tzinfo=timezone(timedelta(hours=-7))),
    datetime(2026, 7, 1, 0, 0, 0, 500, tzinfo=ZoneInfo("UTC")),  # UTC, but not datetime.UTC
    datetime(999, 1, 1, tzinfo=UTC),
]


def test_times_round_trip_as_aware_utc(db_url: str) -> None:
    store = open_store(db_url)
    events = table_of(EventRow)
    with store.engine.begin() as conn:
        conn.execute(insert(events), [{"kind": "t", "created_at": at} for at in TIMES])
        read = conn.execute(select(events.c.created_at).order_by(events.c.id)).scalars().all()
    assert read == TIMES
    assert all(at.tzinfo is UTC for at in read)


def test_sqlite_keeps_sqlalchemys_text(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'times.db'}")
    events = table_of(EventRow)
    events.create(engine)
    reference = DateTime().dialect_impl(engine.dialect).bind_processor(engine.dialect)
    with engine.begin() as conn:
        conn.execute(insert(events), [{"kind": "t", "created_at": at} for at in TIMES])
        stored = conn.execute(text("SELECT created_at FROM events ORDER BY id")).scalars().all()
        # Text SQLite wrote itself (CURRENT_TIMESTAMP has no fraction) reads back too.
        conn.execute(text("UPDATE events SET created_at = '2026-01-02 03:04:05' WHERE id = 1"))
        first = conn.execute(select(events.c.created_at).where(events.c.id == 1)).scalar()
        # So does text another program wrote: ISO's "T", a date alone.
        odd = {2: "2026-01-02T03:04:05.5", 3: "2026-01-02"}
        for row_id, written in odd.items():
            conn.execute(text("UPDATE events SET created_at = :at WHERE id = :id"),
                         {"at": written, "id": row_id})  # fmt: skip
        others = conn.execute(
            select(events.c.created_at).where(events.c.id.in_(odd)).order_by(events.c.id)
        ).scalars().all()
    assert stored == [reference(at.astimezone(UTC).replace(tzinfo=None)) for at in TIMES]
    assert first == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert others == [
        datetime(2026, 1, 2, 3, 4, 5, 500000, tzinfo=UTC),
        datetime(2026, 1, 2, tzinfo=UTC),
    ]
    assert all(at.tzinfo is UTC for at in [first, *others])


def test_a_naive_time_is_refused(db_url: str) -> None:
    store = open_store(db_url)
    with store.engine.begin() as conn, pytest.raises(Exception, match="naive datetime"):
        naive = datetime(2026, 1, 1)  # naive: the mistake under test
        conn.execute(insert(table_of(EventRow)), [{"kind": "t", "created_at": naive}])


def test_sqlite_text_of_repeated_and_alternating_times(tmp_path: Path) -> None:
    """The bind keeps the last time's text (a batch binds the same few times over
    and over): repeats, alternations and one instant in two zones stay right."""
    engine = make_engine(f"sqlite:///{tmp_path / 'times.db'}")
    events = table_of(EventRow)
    events.create(engine)
    same_instant = TIMES[0].astimezone(timezone(timedelta(hours=2)))
    times = [TIMES[0], TIMES[0], TIMES[1], TIMES[0], same_instant, TIMES[2], TIMES[2], TIMES[1]]
    reference = DateTime().dialect_impl(engine.dialect).bind_processor(engine.dialect)
    with engine.begin() as conn:
        conn.execute(insert(events), [{"kind": "t", "created_at": at} for at in times])
        stored = conn.execute(text("SELECT created_at FROM events ORDER BY id")).scalars().all()
    assert stored == [reference(at.astimezone(UTC).replace(tzinfo=None)) for at in times]
