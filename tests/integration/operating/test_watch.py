"""``relay watch`` driven in a real terminal (tmux), and its plain form when piped."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_checks import ok

from relay.core.states import Event

Cli = Callable[..., Any]
DEADLINE = 60.0


def _start(cli: Cli, contact: str, objective: str, *extra: str) -> str:
    args = ("start", contact, "-o", objective, "-t", "Ask", "--defer", *extra, "--json")
    return ok(cli(*args)).json()["id"]


class Terminal:
    """A tmux server of our own (its own socket), 160x40, running one command."""

    def __init__(self, folder: Path) -> None:
        self.socket = f"relay-test-{time.monotonic_ns()}"
        self.folder = folder

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=check
        )

    def run(self, command: str) -> None:
        self.tmux("new-session", "-d", "-x", "160", "-y", "40", "-c", str(self.folder), command)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", check=False).stdout

    def wait_for(self, text: str) -> str:
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared; screen:\n{self.screen()}")

    def wait_exit(self) -> None:
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            if self.tmux("has-session", check=False).returncode != 0:
                return
            time.sleep(0.1)
        raise AssertionError(f"relay watch did not quit; screen:\n{self.screen()}")

    def close(self) -> None:
        self.tmux("kill-server", check=False)


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    term = Terminal(tmp_path)
    try:
        yield term
    finally:
        term.close()


def _watch_command(db_url: str, tmp_path: Path, *extra: str) -> str:
    done = tmp_path / "exit-code"
    relay = " ".join(shlex.quote(a) for a in (sys.executable, "-m", "relay", "watch", *extra))
    return (
        f"env RELAY_DATABASE_URL={shlex.quote(db_url)} {relay} --interval 1s; "
        f"echo $? > {shlex.quote(str(done))}"
    )


@pytest.mark.slow
@pytest.mark.parametrize("key", ["q", "C-c"])
def test_watch_in_a_real_terminal_puts_needs_human_first_and_quits(
    cli: Cli, api: Any, drive: Any, db_url: str, tmp_path: Path, terminal: Terminal, key: str
) -> None:
    calm = _start(cli, "+15551230001", "Confirm the delivery date", "--campaign", "spring")
    urgent = _start(cli, "+15551230002", "Ask about the refund", "--campaign", "spring")
    drive(api, urgent, Event.REQUEST_INTERVENTION)
    _start(cli, "+15551230002", "Queued behind the refund", "--campaign", "spring")
    _start(cli, "+15551230003", "Another campaign", "--campaign", "autumn")

    terminal.run(_watch_command(db_url, tmp_path, "--campaign", "spring"))
    screen = terminal.wait_for(calm)
    lines = screen.splitlines()
    row = {iid: next(i for i, line in enumerate(lines) if iid in line) for iid in (calm, urgent)}
    assert row[urgent] < row[calm]  # needs you: at the top
    assert "NEEDS_HUMAN_INTERVENTION" in lines[row[urgent]]  # whole, never folded
    assert "Another campaign" not in screen
    assert "q quits" in screen

    ok(cli("cancel", calm))  # the view follows the store
    deadline = time.monotonic() + DEADLINE
    while calm in terminal.screen() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert calm not in terminal.screen()

    terminal.tmux("send-keys", key)
    deadline = time.monotonic() + DEADLINE
    while not (tmp_path / "exit-code").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (tmp_path / "exit-code").read_text().strip() == "0"
    assert "q quits" not in terminal.screen()  # the terminal is given back


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
    cli: Cli, db_url: str, tmp_path: Path, terminal: Terminal
) -> None:
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
