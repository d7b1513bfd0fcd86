"""Turn batches and delivery groups grow while the agent and the channel are quick,
and shrink to one when they are slow; time spent in the store does not count.

The timer is the runner's and the dispatcher's own (a fake here): the agent,
the channel or the database advance it, so what is measured is exactly what the
test says each one took, without sleeping.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event

from relay.core.turns import Action, TurnContext
from relay.engine.outbox.dispatcher import DELIVERY_BATCH, Dispatcher
from relay.engine.runtime import Channels
from relay.engine.turns.runner import TURN_BATCH, TurnRunner
from relay.testing import Harness as Engine
from relay.testing import RecordingChannel, ScriptAgent


class Timer:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def timer() -> Timer:
    return Timer()


@pytest.fixture
def scripted(make_engine: Any, script_agent: ScriptAgent) -> Engine:
    return make_engine(**{"agent.backend": "script"})


@pytest.fixture
def slow_store(scripted: Engine, timer: Timer) -> Iterator[None]:
    """Every statement takes a second (a machine busy with other daemons)."""
    engine = scripted.relay.store.engine

    def tick(*_: Any) -> None:
        timer.now += 1.0

    event.listen(engine, "before_cursor_execute", tick)
    yield
    event.remove(engine, "before_cursor_execute", tick)


def _start(engine: Engine, count: int) -> None:
    for number in range(count):
        engine.start(f"+1555010{number:04d}")


def _agent_taking(seconds: float, timer: Timer) -> Any:
    def answer(context: TurnContext) -> list[Action]:
        timer.now += seconds
        return [Action.send_message("Hello!")]

    return answer


@pytest.mark.usefixtures("slow_store")
def test_turn_batches_grow_with_a_quick_agent_however_slow_the_store(
    scripted: Engine, script_agent: ScriptAgent, timer: Timer
) -> None:
    _start(scripted, 30)
    script_agent.then(*[_agent_taking(0.001, timer)] * 30)
    runner = TurnRunner(scripted.relay, "worker", timer=timer)

    outcomes = runner.run_due(30)

    assert len(outcomes) == 30
    # 1, 4, 16, then the 9 left: each quick batch grew fourfold, up to the cap.
    assert runner.batch_size == min(TURN_BATCH, 256)


def test_turn_batches_stay_single_with_a_slow_agent(
    scripted: Engine, script_agent: ScriptAgent, timer: Timer
) -> None:
    _start(scripted, 6)
    script_agent.then(*[_agent_taking(0.5, timer)] * 6)
    runner = TurnRunner(scripted.relay, "worker", timer=timer)

    assert len(runner.run_due(6)) == 6
    assert runner.batch_size == 1


def _dispatcher(engine: Engine, timer: Timer) -> Dispatcher:
    return Dispatcher(engine.relay, Channels(engine.relay), "worker", timer=timer)


@pytest.mark.usefixtures("slow_store")
def test_delivery_groups_grow_with_a_quick_channel_however_slow_the_store(
    make_engine: Any, script_agent: ScriptAgent, test_channel: RecordingChannel, timer: Timer
) -> None:
    engine = make_engine(
        **{"agent.backend": "script", "channels.test.type": "test", "defaults.channel": "test"}
    )
    _start(engine, 30)
    script_agent.then(*[[Action.send_message("Hello!")]] * 30)
    TurnRunner(engine.relay, "worker").run_due(30)
    dispatcher = _dispatcher(engine, timer)

    report = dispatcher.deliver_due(100)

    assert report.sent == 30 and len(test_channel.delivered) == 30
    assert dispatcher.group_size == min(DELIVERY_BATCH, 256)


def test_delivery_groups_stay_single_with_a_slow_channel(
    make_engine: Any, script_agent: ScriptAgent, test_channel: RecordingChannel, timer: Timer
) -> None:
    engine = make_engine(
        **{"agent.backend": "script", "channels.test.type": "test", "defaults.channel": "test"}
    )
    _start(engine, 5)
    script_agent.then(*[[Action.send_message("Hello!")]] * 5)
    TurnRunner(engine.relay, "worker").run_due(5)

    def slow(_: Any) -> None:
        timer.now += 1.0

    test_channel.before_send = slow
    dispatcher = _dispatcher(engine, timer)

    assert dispatcher.deliver_due(100).sent == 5
    assert dispatcher.group_size == 1
