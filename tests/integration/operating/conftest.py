"""The operator's commands run against the same store as this API (the system clock)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tmux_terminal import Terminal


@pytest.fixture
def api(make_relay: Callable[..., Any], db_url: str) -> Any:
    return make_relay(db_url)


@pytest.fixture
def open_terminal(tmp_path: Path) -> Iterator[Callable[..., Terminal]]:
    """``terminal(width, height)``: a real terminal (tmux) of that size; all are
    closed after the test. Skips where tmux is not installed."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    opened: list[Terminal] = []

    def open_(width: int = 160, height: int = 40) -> Terminal:
        opened.append(Terminal(tmp_path, width, height))
        return opened[-1]

    try:
        yield open_
    finally:
        for term in opened:
            term.close()
