"""Unit tests (no database) of sending windows (relay/core/windows.py) and rate specs
(relay/engine/outbox/rates.py parse_rate)."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from relay.core.errors import ConfigError, InvalidInput
from relay.core.windows import Window, is_open, next_open, parse_window, zone
from relay.engine.outbox.rates import Limit, parse_rate

UTC_ZONE = ZoneInfo("UTC")
MADRID = ZoneInfo("Europe/Madrid")
MON, TUE, WED, THU, FRI, SAT, SUN = range(7)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# -- parsing ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "days", "start", "end"),
    [
        ("mon-fri 09:00-18:00", {MON, TUE, WED, THU, FRI}, time(9), time(18)),
        ("09:00-17:30", set(range(7)), time(9), time(17, 30)),
        ("mon,wed,sat 10:00-14:00", {MON, WED, SAT}, time(10), time(14)),
        ("fri-mon 8:00-9:15", {FRI, SAT, SUN, MON}, time(8), time(9, 15)),  # wraps the week
        ("Monday-Friday 09:00 - 18:00", {MON, TUE, WED, THU, FRI}, time(9), time(18)),
        ("  SAT, sun  10:00-12:00 ", {SAT, SUN}, time(10), time(12)),
        ("fri 22:00-02:00", {FRI}, time(22), time(2)),
        ("09:00-24:00", set(range(7)), time(9), time(0)),  # 24:00: the next midnight
    ],
)
def test_parse_window(spec: str, days: set[int], start: time, end: time) -> None:
    assert parse_window(spec) == Window(frozenset(days), start, end)


@pytest.mark.parametrize(
    "spec",
    [
        "",
        "9-17",
        "09:00",
        "mon 09:00",
        "09:00-18:00 mon",
        "mon-fry 09:00-18:00",
        "mo 09:00-18:00",
        "25:00-26:00",
        "09:60-10:00",
        "24:00-09:00",  # 24:00 only ends a window
        "09:00-24:30",
        "mon-fri 0900-1800",
    ],
)
def test_invalid_windows_are_refused_with_the_form_to_use(spec: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_window(spec)
    assert repr(spec.strip()) in caught.value.message or "invalid" in caught.value.message


def test_overnight() -> None:
    assert parse_window("22:00-06:00").overnight
    assert not parse_window("06:00-22:00").overnight


def test_unknown_time_zone() -> None:
    with pytest.raises(InvalidInput, match="unknown time zone 'Mars/Olympus'"):
        zone("Mars/Olympus")
    assert zone(None) == UTC_ZONE


# -- when a window is open ----------------------------------------------------------------------


WORKDAYS = parse_window("mon-fri 09:00-18:00")


@pytest.mark.parametrize(
    ("moment", "opens"),
    [
        ("2026-01-05 12:00", "2026-01-05 12:00"),  # Monday noon: open now
        ("2026-01-05 09:00", "2026-01-05 09:00"),  # opening instant is inside
        ("2026-01-05 08:59:59", "2026-01-05 09:00"),
        ("2026-01-05 18:00", "2026-01-06 09:00"),  # closing instant is outside
        ("2026-01-09 18:30", "2026-01-12 09:00"),  # Friday evening -> Monday
        ("2026-01-10 12:00", "2026-01-12 09:00"),  # Saturday
        ("2026-01-11 23:59", "2026-01-12 09:00"),  # Sunday night
    ],
)
def test_next_open_on_weekdays(moment: str, opens: str) -> None:
    assert next_open(WORKDAYS, utc(moment), UTC_ZONE) == utc(opens)
    assert is_open(WORKDAYS, utc(moment), UTC_ZONE) == (moment == opens)


@pytest.mark.parametrize(
    ("moment", "opens"),
    [
        ("2026-01-09 21:59", "2026-01-09 22:00"),  # Friday before
        ("2026-01-09 23:00", "2026-01-09 23:00"),  # Friday night
        ("2026-01-10 01:59", "2026-01-10 01:59"),  # after midnight: still Friday's window
        ("2026-01-10 02:00", "2026-01-16 22:00"),  # closed until next Friday
        ("2026-01-08 01:00", "2026-01-09 22:00"),  # Thursday 01:00 is not Wednesday's window
    ],
)
def test_an_overnight_window_belongs_to_the_day_it_opens(moment: str, opens: str) -> None:
    window = parse_window("fri 22:00-02:00")
    assert next_open(window, utc(moment), UTC_ZONE) == utc(opens)


def test_a_window_to_midnight_stays_open_to_the_last_second() -> None:
    window = parse_window("09:00-24:00")
    assert is_open(window, utc("2026-01-05 23:59:59"), UTC_ZONE)
    assert next_open(window, utc("2026-01-06 00:00"), UTC_ZONE) == utc("2026-01-06 09:00")
    always = parse_window("00:00-24:00")
    assert all(
        is_open(always, utc("2026-01-05 00:00") + timedelta(minutes=m), UTC_ZONE)
        for m in range(0, 48 * 60, 7)
    )


def test_no_window_means_always_open() -> None:
    assert next_open(None, utc("2026-01-05 03:00"), UTC_ZONE) == utc("2026-01-05 03:00")


# -- daylight saving time ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("moment", "opens"),
    [
        ("2026-03-28 17:30", "2026-03-29 07:00"),  # Sat 18:30 CET -> Sun 09:00 CEST
        ("2026-03-29 06:59", "2026-03-29 07:00"),
        ("2026-10-24 16:30", "2026-10-25 08:00"),  # Sat 18:30 CEST -> Sun 09:00 CET
        ("2026-10-25 07:59", "2026-10-25 08:00"),
        ("2026-10-25 16:59", "2026-10-25 16:59"),  # 17:59 CET: open
        ("2026-10-25 17:00", "2026-10-26 08:00"),  # 18:00 CET: closed
    ],
)
def test_nine_oclock_in_madrid_across_the_clock_changes(moment: str, opens: str) -> None:
    window = parse_window("09:00-18:00")
    assert next_open(window, utc(moment), MADRID) == utc(opens)


def test_a_window_opening_in_the_spring_gap_opens_when_the_clocks_jump() -> None:
    # On 29 March 2026 Madrid's clocks go from 02:00 CET straight to 03:00 CEST
    # (01:00 UTC): 02:30 never happens, so a window from 02:30 opens at the jump.
    window = parse_window("02:30-05:00")
    assert next_open(window, utc("2026-03-28 23:00"), MADRID) == utc("2026-03-29 01:00")
    assert is_open(window, utc("2026-03-29 01:00"), MADRID)
    assert not is_open(window, utc("2026-03-29 00:59:59"), MADRID)
    # The day before and after: 02:30 local as usual (01:30 CET, 00:30 CEST).
    assert next_open(window, utc("2026-03-27 23:00"), MADRID) == utc("2026-03-28 01:30")
    assert next_open(window, utc("2026-03-29 04:00"), MADRID) == utc("2026-03-30 00:30")


def test_a_window_closing_in_the_spring_gap_closes_when_the_clocks_jump() -> None:
    window = parse_window("01:00-02:30")
    assert is_open(window, utc("2026-03-29 00:59:59"), MADRID)  # 01:59:59 CET
    assert not is_open(window, utc("2026-03-29 01:00"), MADRID)  # 03:00 CEST


def test_a_window_opening_in_the_autumn_overlap_opens_at_the_first_one() -> None:
    # On 25 October 2026 02:00-03:00 happens twice in Madrid (00:00-01:00 UTC in
    # CEST, then 01:00-02:00 UTC in CET): the window opens at the first 02:30.
    window = parse_window("02:30-04:00")
    assert next_open(window, utc("2026-10-24 23:00"), MADRID) == utc("2026-10-25 00:30")
    assert is_open(window, utc("2026-10-25 01:45"), MADRID)  # the second 02:45
    assert not is_open(window, utc("2026-10-25 03:00"), MADRID)  # 04:00 CET


# -- rate specifications --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "limits"),
    [
        ("30/minute", [Limit(30, timedelta(minutes=1))]),
        ("1/second, 500/day", [Limit(1, timedelta(seconds=1)), Limit(500, timedelta(days=1))]),
        ("10/minutes", [Limit(10, timedelta(minutes=1))]),
        ("5/Hour", [Limit(5, timedelta(hours=1))]),
        (" 100 / hours ", [Limit(100, timedelta(hours=1))]),
        (
            "20/min, 300/h, 1000/d",
            [
                Limit(20, timedelta(minutes=1)),
                Limit(300, timedelta(hours=1)),
                Limit(1000, timedelta(days=1)),
            ],
        ),
        ("2/s", [Limit(2, timedelta(seconds=1))]),
        ("", []),
    ],
)
def test_parse_rate(spec: str, limits: list[Limit]) -> None:
    assert parse_rate(spec) == limits


@pytest.mark.parametrize(
    "spec", ["0/minute", "-1/day", "abc", "30/fortnight", "30", "/minute", "30/", "1.5/second"]
)
def test_invalid_rates_are_configuration_errors(spec: str) -> None:
    with pytest.raises(ConfigError, match="invalid rate"):
        parse_rate(spec)
