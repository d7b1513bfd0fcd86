"""Fixtures for the conversation engine's end-to-end tests.

Everything is real: the store (SQLite and PostgreSQL through ``db_url``), the
state machine, turns, the outbox, the console channel. Test doubles enter only
through the public registries, the way a third-party backend would.

    ``engine``        a :class:`relay.testing.Harness`: a Relay on ``db_url`` with
                      the fake clock and console echo off, plus read helpers.
    ``make_engine``   the same with config overrides: ``make_engine(**{"k": v})``.
    ``script_agent``  the plugin's ``relay_agent``: a :class:`relay.testing.ScriptAgent`
                      registered as agent ``script``: queue actions or errors per turn.
    ``test_channel``  the plugin's ``relay_channel``: a
                      :class:`relay.testing.RecordingChannel` registered as channel
                      type ``test`` (``channels.NAME.type = "test"``): queue failures;
                      it records every attempt.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from engine_relay import EngineRelay as Relay

from relay.channels import base as channels_base
from relay.testing import Harness, RecordingChannel, ScriptAgent


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
def script_agent(relay_agent: ScriptAgent) -> ScriptAgent:
    return relay_agent


@pytest.fixture
def test_channel(relay_channel: RecordingChannel) -> RecordingChannel:
    return relay_channel


@pytest.fixture
def make_engine(
    make_relay: Callable[..., Relay], db_url: str, clock: Any, tmp_path: Path
) -> Callable[..., Harness]:
    def build(**overrides: Any) -> Harness:
        settings = {"channels.console.echo": False, **overrides}
        relay = make_relay(db_url, clock, **settings)
        return Harness(relay, clock, relay.config.data_dir)

    return build


@pytest.fixture
def engine(make_engine: Callable[..., Harness]) -> Harness:
    return make_engine()
