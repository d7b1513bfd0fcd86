"""``relay watch`` driven in a real terminal (tmux), and its plain form when piped."""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_checks import ok
from tmux_terminal import Terminal

from relay.core.states import Event

Cli = Callable[..., Any]
Opener = Callable[..., Terminal]
DEADLINE = 20.0


def _start(cli: Cli, contact: str, objective: str, *extra: str) -> str:
    args = ("start", contact, "-o", objective, "-t", "Ask", "--defer", *extra, "--json")
    return ok(cli(*args)).json()["id"]


def _watch_command(db_url: str, tmp_path: Path, *extra: str) -> str:
    done = tmp_path / "exit-code"
    relay = " ".join(shlex.quote(a) for a in (sys.executable, "-m", "relay", "watch", *extra))
    return (
        f"env -u COLUMNS RELAY_DATABASE_URL={shlex.quote(db_url)} {relay} --interval 1s; "
        f"echo $? > {shlex.quote(str(done))}"
    )


@pytest.mark.slow
@pytest.mark.parametrize("key", ["q", "C-c"])
def test_watch_in_a_real_terminal_puts_needs_human_first_and_quits(
    cli: Cli, api: Any, drive: Any, db_url: str, tmp_path: Path, open_terminal: Opener, key: str
) -> None:
    calm = _start(cli, "+15551230001", "Confirm the delivery date", "--campaign", "spring")
    urgent = _start(cli, "+15551230002", "Ask about the refund", "--campaign", "spring")
    drive(api, urgent, Event.REQUEST_INTERVENTION)
    _start(cli, "+15551230002", "Queued behind the refund", "--campaign", "spring")
    _start(cli, "+15551230003", "Another campaign", "--campaign", "autumn")

    terminal = open_terminal(160, 40)
    terminal.run(_watch_command(db_url, tmp_path, "--campaign", "spring"))
    screen = terminal.wait_for(calm)
    lines = screen.splitlines()
    row = {iid: next(i for i, line in enumerate(lines) if iid in line) for iid in (calm, urgent)}
    assert row[urgent] < row[calm]  # needs you: at the top
    assert "NEEDS_HUMAN_INTERVENTION" in lines[row[urgent]]  # whole, never folded
    assert "Another campaign" not in screen
    assert "q quit" in screen

    ok(cli("cancel", calm))  # the view follows the store
    deadline = time.monotonic() + DEADLINE
    while calm in terminal.screen() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert calm not in terminal.screen()

    terminal.tmux("send-keys", key)
    deadline = time.monotonic() + DEADLINE
    done = tmp_path / "exit-code"
    # The shell creates the file before echo writes to it: wait for its line.
    while not (done.exists() and done.read_text().endswith("\n")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert done.read_text().strip() == "0"
    assert "q quit" not in terminal.screen()  # the terminal is given back


def test_watch_prints_a_plain_table_when_piped(cli: Cli, api: Any, drive: Any) -> None:
    first = _start(cli, "+15551230001", "Confirm the delivery date")
    second = _start(cli, "+15551230002", "Ask about the refund")
    drive(api, second, Event.REQUEST_INTERVENTION)
    out = ok(cli("watch", "--count", "1")).stdout
    lines = out.splitlines()
    assert lines[0].startswith("relay watch · 2 conversation(s) · 1 need you")
    assert lines[1].split("\t")[:3] == ["state", "id", "contact"]
    assert lines[2].startswith("NEEDS_HUMAN_INTERVENTION\t" + second)
    assert first in lines[3]
    ok(cli("cancel", first))
    assert first not in ok(cli("watch", "--count", "1")).stdout
    assert first in ok(cli("watch", "--count", "1", "--all")).stdout
    assert cli("watch", "--state", "nope", "--count", "1").exit_code == 2


@pytest.mark.slow
def test_import_shows_its_progress_bar_in_a_terminal(
    cli: Cli, db_url: str, tmp_path: Path, open_terminal: Opener
) -> None:
    terminal = open_terminal()
    rows = 3000
    path = tmp_path / "contacts.csv"
    lines = ["phone,name,order"] + [f"+1555{n:07d},N{n},{n}" for n in range(rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = tmp_path / "exit-code"
    relay = " ".join(
        shlex.quote(a)
        for a in (sys.executable, "-m", "relay", "import", str(path), "-o", "Order {order}",
                  "-t", "Which day suits {name}?", "--campaign", "bulk")
    )  # fmt: skip
    terminal.run(
        f"env RELAY_DATABASE_URL={shlex.quote(db_url)} {relay}; echo $? > {done}; sleep 60"
    )
    screen = terminal.wait_for(f"started {rows} of {rows} row(s)")
    assert "importing" in screen and f"{rows}/{rows}" in screen  # the finished bar
    deadline = time.monotonic() + DEADLINE
    while not done.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert done.read_text().strip() == "0"
    assert len(ok(cli("list", "--campaign", "bulk", "--limit", "5000", "--json")).json()) == rows


# -- 500 conversations in 80x24: scroll, filter, sort --------------------------------


def _import(cli: Cli, tmp_path: Path, rows: int) -> None:
    """``rows`` conversations in one import: contact ``Person NNN`` at +1555000NNNN."""
    path = tmp_path / "people.csv"
    lines = ["phone,name,order"] + [f"+1555{n:07d},Person {n:03d},{n}" for n in range(rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ok(cli("import", str(path), "-o", "Confirm the delivery date of order {order}",
           "-t", "Which day suits {name}?", "--campaign", "bulk"))  # fmt: skip


def _rows_on(screen: str) -> list[str]:
    return [line for line in screen.splitlines() if "Person " in line]


@pytest.mark.slow
def test_watch_scrolls_filters_and_sorts_500_conversations_in_80_by_24(
    cli: Cli, api: Any, drive: Any, db_url: str, tmp_path: Path, open_terminal: Opener
) -> None:
    _import(cli, tmp_path, 500)
    urgent = next(v for v in api.watch(limit=1000) if v.contact_name == "Person 123")
    drive(api, urgent.id, Event.REQUEST_INTERVENTION)
    terminal = open_terminal(80, 24)
    done = terminal.relay(db_url, "watch", "--interval", "30s")

    first = terminal.wait_for("1-21 of 500 · 479 more")
    lines = first.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert lines[1].split() == ["state", "id", "contact", "next", "objective", "age"]
    rows = _rows_on(first)
    assert len(rows) == 21
    # Needs you at the top, in its short name; then the newest; the objective readable.
    assert rows[0].startswith("NEEDS HUMAN") and "Person 123" in rows[0]
    assert urgent.id in rows[0] and "a person" in rows[0]
    assert "Person 499" in rows[1] and "first msg now" in rows[1]
    assert "Confirm the delivery date" in rows[1]
    assert "499 live, 1 needs you" in lines[-1]

    terminal.keys("PageDown")
    assert "Person 479" in _rows_on(terminal.wait_for("22-42 of 500 · 458 more"))[0]
    terminal.keys("End")
    last = terminal.wait_for("480-500 of 500 · end")
    assert "Person 000" in _rows_on(last)[-1]
    terminal.keys("Up")
    assert "Person 000" not in terminal.wait_for("479-499 of 500 · 1 more")
    terminal.keys("Home")
    terminal.wait_for("1-21 of 500")

    terminal.keys("/")
    terminal.type("person 25")
    terminal.wait_for("filter: person 25▏")
    terminal.keys("Enter")
    narrowed = terminal.wait_for("filter: person 25 · sort")  # kept: no cursor, no hint
    assert "1-10 of 10 · end" in narrowed  # Person 250 to 259
    assert sorted(line.split()[3] for line in _rows_on(narrowed)) == [
        f"{n}" for n in range(250, 260)
    ]
    terminal.keys("Escape")
    terminal.wait_for("1-21 of 500 · 479 more")

    terminal.keys("s")
    terminal.keys("s")
    terminal.keys("s")
    by_contact = terminal.wait_for("sort: contact")
    assert "Person 000" in _rows_on(by_contact)[0]
    terminal.keys("q")
    assert terminal.wait_file(done) == "0"


@pytest.mark.slow
def test_watch_at_160_columns_shows_full_state_names_address_and_last_message(
    cli: Cli, api: Any, drive: Any, db_url: str, tmp_path: Path, open_terminal: Opener
) -> None:
    _import(cli, tmp_path, 30)
    ok(cli("tick", "--no-poll"))  # first messages out: a last message and a follow-up due
    terminal = open_terminal(160, 24)
    done = terminal.relay(db_url, "watch", "--interval", "30s")
    screen = terminal.wait_for("1-21 of 30 · 9 more")
    header = screen.splitlines()[1].split()
    assert header == ["state", "id", "contact", "address", "next", "objective", "last", "message",
                      "age"]  # fmt: skip
    row = _rows_on(screen)[0]
    assert row.startswith("WAITING_FOR_REPLY") and "+15550000029" in row
    assert "follow-up in 29m" in row or "follow-up in 30m" in row
    assert "→ Hello!" in row
    terminal.keys("q")
    assert terminal.wait_file(done) == "0"


@pytest.mark.slow
def test_watch_without_a_keyboard_only_refreshes(
    cli: Cli, db_url: str, tmp_path: Path, open_terminal: Opener
) -> None:
    _start(cli, "+15551230001", "Confirm the delivery date")
    terminal = open_terminal(80, 24)
    # stdin is not a terminal (a pipe from /dev/null): no key handling, no crash.
    done = terminal.relay(db_url, "watch", "--interval", "1s", "--count", "2", stdin="/dev/null")
    code = terminal.wait_file(done)
    assert code == "0", terminal.history()
    assert "Traceback" not in terminal.history()
