"""Fixtures for the heartbeat daemon's tests (issue 4).

    ``make_relay_here``  ``make_relay_here(**config)`` -> a Relay on ``db_url`` with the
                         fake ``clock``, console echo off and the console file in the
                         test's folder.
    ``relay``            ``make_relay_here()``.
    ``register_agent``   ``register_agent(name, agent)`` through relay's agent registry,
                         undone at teardown.

A test that needs one backend only narrows ``db_url`` with
``daemon_support.SQLITE_ONLY`` or ``daemon_support.POSTGRES_ONLY``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from engine_relay import EngineRelay as Relay

from relay.agents import base as agents_base


@pytest.fixture
def console_file(tmp_path: Path) -> Path:
    return tmp_path / "console.jsonl"


@pytest.fixture
def make_relay_here(
    make_relay: Callable[..., Relay], db_url: str, clock: Any, console_file: Path
) -> Callable[..., Relay]:
    def build(**overrides: Any) -> Relay:
        settings = {
            "channels.console.echo": False,
            "channels.console.file": str(console_file),
            **overrides,
        }
        return make_relay(db_url, clock, **settings)

    return build


@pytest.fixture
def relay(make_relay_here: Callable[..., Relay]) -> Relay:
    return make_relay_here()


@pytest.fixture
def register_agent() -> Iterator[Callable[[str, Any], None]]:
    added: list[str] = []

    def register(name: str, agent: Any) -> None:
        agents_base.register_agent(name, lambda settings: agent)
        added.append(name)

    yield register
    for name in added:
        agents_base.AGENTS.unregister(name)
