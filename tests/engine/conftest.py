"""Fixtures for the conversation engine's end-to-end tests.

Everything is real: the store (SQLite and PostgreSQL through ``db_url``), the
state machine, turns, the outbox, the console channel. Test doubles enter only
through the public registries, the way a third-party backend would.

    ``engine``        an :class:`engine_support.Engine`: a Relay on ``db_url`` with
                      the fake clock and console echo off, plus read helpers.
    ``make_engine``   the same with config overrides: ``make_engine(**{"k": v})``.
    ``script_agent``  a :class:`engine_support.ScriptAgent` registered as agent
                      ``script``: queue actions or errors per turn; it records contexts.
    ``test_channel``  a :class:`engine_support.TestChannel` registered as channel
                      type ``test`` (``channels.NAME.type = "test"``): queue failures;
                      it records every attempt.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from engine_support import Engine, ScriptAgent, TestChannel

from relay.agents import base as agents_base
from relay.channels import base as channels_base
from relay.engine.service import Relay


@pytest.fixture
def register_channel() -> Iterator[Callable[[str, Any], None]]:
    """``register_channel(kind, factory)`` through relay's registry, undone at teardown."""
    added: list[str] = []

    def register(kind: str, factory: Any) -> None:
        channels_base.register_channel(kind, factory)
        added.append(kind)

    yield register
    for kind in added:
        channels_base.CHANNELS.unregister(kind)


@pytest.fixture
def script_agent() -> Iterator[ScriptAgent]:
    agent = ScriptAgent()
    agents_base.register_agent("script", lambda settings: agent)
    yield agent
    agents_base.AGENTS.unregister("script")


@pytest.fixture
def test_channel(register_channel: Callable[[str, Any], None]) -> TestChannel:
    channel = TestChannel()
    register_channel("test", lambda name, settings: channel)
    return channel


@pytest.fixture
def make_engine(
    make_relay: Callable[..., Relay], db_url: str, clock: Any, tmp_path: Path
) -> Callable[..., Engine]:
    def build(**overrides: Any) -> Engine:
        settings = {"channels.console.echo": False, **overrides}
        relay = make_relay(db_url, clock, **settings)
        return Engine(relay, clock, relay.config.data_dir)

    return build


@pytest.fixture
def engine(make_engine: Callable[..., Engine]) -> Engine:
    return make_engine()
