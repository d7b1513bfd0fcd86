"""A real terminal for tests: a tmux server of our own (its own socket) running
one command in a pane of a chosen size; read the screen, press keys.

Waiting is for output, never for time: :meth:`Terminal.wait_for` polls the
screen until the text appears, up to a short deadline.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

DEADLINE = 20.0


class Terminal:
    """tmux at ``width`` x ``height`` running one command."""

    def __init__(self, folder: Path, width: int = 160, height: int = 40) -> None:
        self.socket = f"relay-test-{time.monotonic_ns()}"
        self.folder = folder
        self.width, self.height = width, height

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=check
        )

    def run(self, command: str) -> None:
        size = ("-x", str(self.width), "-y", str(self.height))
        self.tmux("new-session", "-d", *size, "-c", str(self.folder), command)

    def relay(self, db_url: str, *args: str, stdin: str | None = None) -> Path:
        """Run ``relay ARGS`` on ``db_url`` (``stdin``: a file to read instead of
        the terminal); the file returned gets its exit code. The pane stays open
        afterwards so its output can be read."""
        done = self.folder / f"exit-{time.monotonic_ns()}"
        command = " ".join(shlex.quote(a) for a in (sys.executable, "-m", "relay", *args))
        redirect = f" < {shlex.quote(stdin)}" if stdin else ""
        self.run(
            f"env -u COLUMNS -u LINES RELAY_DATABASE_URL={shlex.quote(db_url)} {command}"
            f"{redirect}; echo $? > {shlex.quote(str(done))}; sleep 600"
        )
        return done

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", check=False).stdout

    def history(self) -> str:
        """The whole pane, what scrolled off the top included."""
        return self.tmux("capture-pane", "-p", "-S", "-", check=False).stdout

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", *keys)

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-l", text)

    def wait_for(self, text: str) -> str:
        return self.wait_until(lambda screen: text in screen, f"{text!r} never appeared")

    def wait_until(self, condition: Callable[[str], bool], what: str) -> str:
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            screen = self.screen()
            if condition(screen):
                return screen
            time.sleep(0.05)
        raise AssertionError(f"{what}; screen:\n{self.screen()}")

    def wait_file(self, path: Path) -> str:
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            if path.exists() and path.read_text().strip():
                return path.read_text().strip()
            time.sleep(0.05)
        raise AssertionError(f"the command did not finish; screen:\n{self.screen()}")

    def close(self) -> None:
        self.tmux("kill-server", check=False)
