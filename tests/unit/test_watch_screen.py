"""``relay watch``'s drawing without a terminal: the columns each width keeps, the
footer's "N more" and counts, scrolling, the filter, the sort, and key decoding."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import pytest
from rich.console import Console

from relay.api import WatchRow
from relay.cli import keys, render, watch_screen
from relay.core.forecasts import Forecast, Next
from relay.core.states import LIFECYCLE, State

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _row(n: int, state: str = "WAITING_FOR_REPLY", **extra: object) -> WatchRow:
    values: dict[str, object] = {
        "id": f"id{n:05d}",
        "contact": f"+1555{n:07d}",
        "contact_name": f"Person {n:03d}",
        "state": state,
        "previous_state": None,
        "objective": f"Confirm the delivery date of order {n}",
        "campaign": "spring",
        "updated_at": NOW - timedelta(minutes=n),
        "next_heartbeat_at": NOW + timedelta(minutes=20),
        "queue_depth": 0,
        "last_message": "Hello! Which day suits you?",
        "last_direction": "outbound",
        "last_message_at": NOW - timedelta(minutes=n),
        "next": Forecast(Next.FOLLOW_UP, at=NOW + timedelta(minutes=20), number="1/5"),
    }
    values.update(extra)
    return WatchRow(**values)  # type: ignore[arg-type]


def _screen(view: watch_screen.View, width: int, height: int = 24) -> list[str]:
    out = io.StringIO()
    console = Console(file=out, width=width, height=height, force_terminal=False)
    console.print(watch_screen.draw(view, NOW, width, height, limit=1000))
    return out.getvalue().splitlines()


def _header(lines: list[str]) -> list[str]:
    return lines[1].replace("last message", "last_message").split()


@pytest.mark.parametrize(
    ("width", "header"),
    [
        (80, ["state", "id", "contact", "next", "objective"]),
        (100, ["state", "id", "contact", "next", "objective", "last_message", "age"]),
        (160, ["state", "id", "contact", "address", "next", "objective", "last_message", "age"]),
    ],
)
def test_each_width_keeps_state_name_next_and_objective_and_drops_the_least_useful(
    width: int, header: list[str]
) -> None:
    rows = [_row(n) for n in range(30)]
    rows[0] = _row(0, "NEEDS_HUMAN_INTERVENTION", next=Forecast(Next.PERSON))
    lines = _screen(watch_screen.View(rows=rows), width)
    assert len(lines) == 24
    assert all(len(line) <= width for line in lines)
    assert _header(lines) == header
    full = width >= 140
    assert lines[2].startswith("NEEDS_HUMAN_INTERVENTION" if full else "NEEDS HUMAN ")
    assert "Person 000" in lines[2] and "a person" in lines[2]
    assert "follow-up in 20m" in lines[3]
    # The objective stays readable: at least its first three words.
    assert "Confirm the delivery" in lines[3]


def test_a_queue_column_appears_only_where_a_contact_has_one_queued() -> None:
    plain = _screen(watch_screen.View(rows=[_row(1)]), 160)
    queued = _screen(watch_screen.View(rows=[_row(1, queue_depth=2)]), 160)
    assert "queue" not in _header(plain)
    assert _header(queued)[-1] == "queue" and queued[2].rstrip().endswith("2")


def test_the_footer_says_how_many_more_and_counts_each_family() -> None:
    rows = [_row(n) for n in range(50)] + [_row(99, "NEEDS_HUMAN_INTERVENTION")]
    view = watch_screen.View(rows=rows)
    assert _screen(view, 80)[-1] == (
        "1-21 of 51 · 30 more · 50 waiting, 1 needs you · sort: needs you"
    )
    view.press("end", 21)
    assert _screen(view, 80)[-1].startswith("31-51 of 51 · end")
    limited = _screen(watch_screen.View(rows=rows[:10]), 160, 24)
    assert "stopped at --limit" not in limited[-1]
    out = io.StringIO()
    Console(file=out, width=160, height=24).print(
        watch_screen.draw(watch_screen.View(rows=rows[:10]), NOW, 160, 24, limit=10)
    )
    assert out.getvalue().splitlines()[-1].endswith("stopped at --limit 10")


def test_keys_scroll_a_page_at_a_time_and_never_past_the_last_row() -> None:
    view = watch_screen.View(rows=[_row(n) for n in range(100)])
    page = watch_screen.page_size(24)
    assert page == 21
    for key, offset in [("down", 1), ("pgdn", 22), ("pgup", 1), ("up", 0), ("up", 0),
                        ("end", 79), ("down", 79), ("home", 0), ("G", 79), ("g", 0)]:  # fmt: skip
        assert view.press(key, page)
        assert view.offset == offset, key
    assert view.press("q", page) is False
    assert view.press("ctrl-c", page) is False


def test_the_filter_is_typed_kept_and_cleared() -> None:
    view = watch_screen.View(rows=[_row(n) for n in range(300)])
    view.press("pgdn", 21)
    for key in ["/", *"PERSON 25", "backspace", "5"]:
        view.press(key, 21)
    assert view.typing and view.offset == 0
    assert [r.contact_name for r in view.shown()][:2] == ["Person 250", "Person 251"]
    assert len(view.shown()) == 10
    view.press("s", 21)  # typed, not a command, while the filter is open
    assert view.query == "PERSON 25s" and view.sort == 0
    view.press("backspace", 21)
    view.press("enter", 21)
    assert not view.typing and len(view.shown()) == 10
    assert "filter: PERSON 25 ·" in _screen(view, 120)[-1]
    view.press("esc", 21)
    assert view.query == "" and len(view.shown()) == 300
    view.press("/", 21)
    view.press("x", 21)
    view.press("esc", 21)
    assert not view.typing and view.query == ""
    nothing = watch_screen.View(rows=[_row(1)], query="nobody")
    assert "No conversation matches 'nobody'" in "\n".join(_screen(nothing, 80))


def test_s_cycles_the_orders_the_state_order_being_the_lifecycle() -> None:
    states = [State.FAILED, State.QUEUED, State.PAUSED, State.CREATED, State.WAITING_FOR_AGENT]
    rows = [_row(n, s.value) for n, s in enumerate(states)]
    view = watch_screen.View(rows=rows)
    names = []
    for _ in watch_screen.SORTS:
        names.append(watch_screen.SORTS[view.sort][0])
        if names[-1] == "state":
            shown = [State(r.state) for r in view.shown()]
            assert shown == sorted(states, key=LIFECYCLE.index)
        view.press("s", 21)
    assert view.sort == 0 and len(set(names)) == len(watch_screen.SORTS)


def test_short_state_names_tell_every_state_apart() -> None:
    shown = [render.SHORT_STATES.get(s.value, s.value) for s in State]
    assert len(set(shown)) == len(shown)
    assert max(len(name) for name in shown) <= 11


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"\x1b[A\x1b[B", ["up", "down"]),
        (b"\x1bOA\x1bOB", ["up", "down"]),
        (b"\x1b[5~\x1b[6~", ["pgup", "pgdn"]),
        (b"\x1b[H\x1b[F\x1b[1~\x1b[4~", ["home", "end", "home", "end"]),
        (b"/ann\r", ["/", "a", "n", "n", "enter"]),
        (b"\x1b", ["esc"]),
        (b"\x7fq", ["backspace", "q"]),
        (b"\x1b[15~s", ["s"]),  # F5: an unknown sequence is dropped whole
        ("é".encode(), ["é"]),
    ],
)
def test_keys_decode_sequences_and_text(data: bytes, expected: list[str]) -> None:
    assert keys.decode(data) == expected
