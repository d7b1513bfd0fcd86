"""Key presses read from a terminal in cbreak mode, as names.

A terminal sends a special key as an escape sequence (the up arrow is
``ESC [ A``); one read may hold several keys, or a sequence and typed text.
:func:`decode` turns the bytes into names (``up``, ``pgdn``, ``esc``,
``enter``, ``backspace``) and printable characters, so a screen can act on
them without knowing how terminals spell them.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import time
from collections.abc import Callable, Iterator

#: The sequences xterm, tmux and the Linux console send (``ESC O`` forms are
#: the application-cursor mode some terminals switch to).
SEQUENCES: dict[str, str] = {
    "\x1b[A": "up",
    "\x1b[B": "down",
    "\x1b[C": "right",
    "\x1b[D": "left",
    "\x1bOA": "up",
    "\x1bOB": "down",
    "\x1bOC": "right",
    "\x1bOD": "left",
    "\x1b[5~": "pgup",
    "\x1b[6~": "pgdn",
    "\x1b[H": "home",
    "\x1b[F": "end",
    "\x1bOH": "home",
    "\x1bOF": "end",
    "\x1b[1~": "home",
    "\x1b[4~": "end",
    "\x1b[7~": "home",
    "\x1b[8~": "end",
}

_SINGLE = {"\r": "enter", "\n": "enter", "\x7f": "backspace", "\x08": "backspace", "\x03": "ctrl-c"}


def decode(data: bytes) -> list[str]:
    """The keys in one read: names for special keys, the character for the rest.
    An escape sequence not in :data:`SEQUENCES` is dropped whole (never typed)."""
    text = data.decode(errors="replace")
    keys: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\x1b":
            index = _sequence(text, index, keys)
            continue
        keys.append(_SINGLE.get(char, char))
        index += 1
    return keys


def _sequence(text: str, index: int, keys: list[str]) -> int:
    """Read the escape sequence at ``index``; returns where the next key starts."""
    for sequence, name in SEQUENCES.items():
        if text.startswith(sequence, index):
            keys.append(name)
            return index + len(sequence)
    if index + 1 >= len(text) or text[index + 1] not in "[O":
        keys.append("esc")  # ESC alone (or ESC then a key: Alt+key reads as both)
        return index + 1
    # CSI/SS3 we do not know: skip to its final byte (a letter or ~).
    end = index + 2
    while end < len(text) and not (text[end].isalpha() or text[end] == "~"):
        end += 1
    return end + 1


Reader = Callable[[float], list[str]]


@contextlib.contextmanager
def cbreak() -> Iterator[Reader]:
    """Read keys from stdin without Enter and without echo, until the block ends
    (the terminal is restored on the way out). Yields ``read(timeout)``: the keys
    pressed, waiting at most ``timeout`` seconds for the first."""
    import termios
    import tty

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setcbreak(fd, termios.TCSANOW)  # keep keys typed before the screen came up

    def read(timeout: float) -> list[str]:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                data = os.read(fd, 256)
                if not data:  # end of input: nothing more will come
                    time.sleep(left)
                    return []
                return decode(data)
        return []

    try:
        yield read
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
