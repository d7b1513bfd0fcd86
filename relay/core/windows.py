"""Sending windows: the hours and weekdays when proactive messages may go out.

A window is written ``"mon-fri 09:00-18:00"``, ``"09:00-17:30"`` (every day),
``"mon,wed,sat 10:00-14:00"`` or ``"fri 22:00-02:00"`` (past midnight: the part
after midnight belongs to the day the window opened); ``24:00`` ends a window at
midnight. Times are wall-clock in the contact's zone, so a window follows
daylight-saving changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from relay.core.errors import InvalidInput

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_SPEC = re.compile(
    r"^(?:(?P<days>[a-z,\-\s]+?)\s+)?(?P<start>\d{1,2}:\d{2})\s*-\s*(?P<end>\d{1,2}:\d{2})$"
)


@dataclass(frozen=True)
class Window:
    days: frozenset[int]
    start: time
    end: time

    @property
    def overnight(self) -> bool:
        return self.end <= self.start


def parse_window(text: str) -> Window:
    match = _SPEC.match(text.strip().lower())
    if not match:
        raise InvalidInput(f"invalid window {text!r}: use forms like 'mon-fri 09:00-18:00'")
    days = _parse_days(match.group("days")) if match.group("days") else frozenset(range(7))
    start = _parse_time(match.group("start"), text, end=False)
    return Window(days, start, _parse_time(match.group("end"), text, end=True))


def _parse_time(value: str, text: str, *, end: bool) -> time:
    hours, minutes = (int(p) for p in value.split(":"))
    if end and hours == 24 and minutes == 0:
        # Midnight at the end of the day: as an end before-or-equal to the start,
        # 00:00 closes the window at the next midnight ("09:00-24:00", "00:00-24:00").
        return time(0, 0)
    if hours > 23 or minutes > 59:
        raise InvalidInput(f"invalid time {value!r} in window {text!r}")
    return time(hours, minutes)


def _parse_days(text: str) -> frozenset[int]:
    days: set[int] = set()
    for part in (p.strip() for p in text.split(",") if p.strip()):
        if "-" in part:
            first, last = (_day(p) for p in part.split("-", 1))
            span = (last - first) % 7
            days.update((first + i) % 7 for i in range(span + 1))
        else:
            days.add(_day(part))
    return frozenset(days)


def _day(name: str) -> int:
    key = name.strip()[:3]
    if key not in DAYS:
        raise InvalidInput(f"invalid weekday {name!r}: use mon, tue, wed, thu, fri, sat, sun")
    return DAYS.index(key)


def zone(name: str | None) -> ZoneInfo:
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidInput(f"unknown time zone {name!r}") from None


def _local(day: date, moment: time, tz: ZoneInfo) -> datetime:
    """A wall-clock time on ``day`` in ``tz`` as UTC.

    A time skipped by a DST jump (02:30 on the night clocks go from 02:00 to
    03:00) becomes the instant of the jump, the first one whose wall clock has
    passed it; a time that happens twice (the night clocks go back) is its first
    occurrence.
    """
    wall = datetime.combine(day, moment)
    candidate = wall.replace(tzinfo=tz).astimezone(UTC)
    if candidate.astimezone(tz).replace(tzinfo=None) == wall:
        return candidate
    # In a gap: the jump lies between reading the wall time with the offset after
    # it (earlier, still before the jump) and with the offset before it (later).
    low = wall.replace(tzinfo=tz, fold=1).astimezone(UTC)
    high = candidate
    while high - low > timedelta(seconds=1):
        middle = low + (high - low) / 2
        if middle.astimezone(tz).replace(tzinfo=None) >= wall:
            high = middle
        else:
            low = middle
    return high.replace(microsecond=0)


def next_open(window: Window | None, moment: datetime, tz: ZoneInfo) -> datetime:
    """``moment`` if the window is open then, else the next instant it opens."""
    if window is None:
        return moment
    local_day = moment.astimezone(tz).date()
    # Start a day early so an overnight window opened yesterday is seen.
    for offset in range(-1, 9):
        day = local_day + timedelta(days=offset)
        if day.weekday() not in window.days:
            continue
        opens = _local(day, window.start, tz)
        closes_day = day + timedelta(days=1) if window.overnight else day
        closes = _local(closes_day, window.end, tz)
        if opens <= moment < closes:
            return moment
        if opens > moment:
            return opens
    raise InvalidInput("window never opens")  # unreachable: days is never empty


def is_open(window: Window | None, moment: datetime, tz: ZoneInfo) -> bool:
    return next_open(window, moment, tz) == moment
