"""relay's pytest plugin: the doubles of :mod:`relay.testing` as fixtures.

Installed with relay (a ``pytest11`` entry point), so a project's own tests
can write::

    def test_the_reminder_goes_out(relay_harness, relay_agent):
        iid = relay_harness.start("+15551230001", ["Which day suits you?"])
        relay_harness.clock.advance(timedelta(hours=1))
        relay_harness.tick()
        ...

``relay_clock``         a :class:`~relay.testing.FakeClock`; move it, never sleep.
``relay_agent``         a :class:`~relay.testing.ScriptAgent` registered as agent
                        ``script`` (``agent="script"``); queue its turns.
``relay_channel``       a :class:`~relay.testing.RecordingChannel` registered as
                        channel type ``test`` (``channel="test"``); it records sends.
``relay_make_harness``  ``relay_make_harness(**settings)`` -> a
                        :class:`~relay.testing.Harness` on a fresh SQLite database in
                        the test's temporary folder, on ``relay_clock``.
``relay_harness``       ``relay_make_harness()``.

Registrations are undone after each test, and the harness reads no
``relay.toml`` of the project it runs in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from relay.testing import FakeClock, Harness, RecordingChannel, ScriptAgent


@pytest.fixture
def relay_clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def relay_agent() -> Iterator[ScriptAgent]:
    from relay.agents.base import AGENTS, register_agent

    agent = ScriptAgent()
    register_agent(agent.name, lambda settings: agent)
    yield agent
    AGENTS.unregister(agent.name)


@pytest.fixture
def relay_channel() -> Iterator[RecordingChannel]:
    from relay.channels.base import CHANNELS, register_channel

    channel = RecordingChannel()
    register_channel(channel.name, lambda name, settings: channel)
    yield channel
    CHANNELS.unregister(channel.name)


@pytest.fixture
def relay_make_harness(
    tmp_path_factory: pytest.TempPathFactory, relay_clock: FakeClock
) -> Iterator[Callable[..., Harness]]:
    from relay.api import Relay, load_config

    opened: list[Relay] = []

    def build(**settings: Any) -> Harness:
        folder: Path = tmp_path_factory.mktemp("relay")
        (folder / "relay.toml").write_text("", encoding="utf-8")
        config = load_config(
            folder / "relay.toml", overrides={"channels.console.echo": False, **settings}
        )
        relay = Relay.open(config, relay_clock)
        opened.append(relay)
        return Harness(relay, relay_clock, config.data_dir)

    yield build
    for relay in opened:
        relay.close()


@pytest.fixture
def relay_harness(relay_make_harness: Callable[..., Harness]) -> Harness:
    return relay_make_harness()
