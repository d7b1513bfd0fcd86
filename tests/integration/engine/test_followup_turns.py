"""Follow-up turns (the heartbeat's firing is tested elsewhere): a reply that arrives
after the heartbeat fired but before the follow-up turn ran is the turn's to answer,
and it ends the silence the follow-ups were counting."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from relay.core.turns import Action, TurnReason
from relay.engine.conversation import heartbeat
from relay.engine.outbox.dispatcher import Dispatcher
from relay.engine.runtime import Channels
from relay.engine.turns.runner import TurnRunner
from relay.runner.pulse import Pulse
from relay.testing import PHONE, Harness, ScriptAgent

A = Action


def _fire(engine: Harness) -> None:
    engine.clock.advance(timedelta(hours=1))
    assert heartbeat.fire_due(engine.relay, 10).fired == 1


def test_a_follow_up_turn_counts_the_follow_up(make_engine: Any, script_agent: ScriptAgent) -> None:
    engine = make_engine(**{"agent.backend": "script"})
    script_agent.then([A.send_message("Hello")], [A.send_message("Still there?")])
    iid = engine.start(heartbeat="1h", max_followups=1)
    engine.tick()
    _fire(engine)
    engine.tick()
    assert script_agent.contexts[-1].reason is TurnReason.FOLLOW_UP
    view = engine.view(iid)
    assert (view.state, view.follow_up_count) == ("WAITING_FOR_REPLY", 1)
    # Silence again: the limit is reached, the instance is abandoned.
    engine.clock.advance(timedelta(hours=1))
    engine.tick()
    assert engine.state(iid) == "ABANDONED"


def test_a_reply_before_the_follow_up_turn_resets_the_count(
    make_engine: Any, script_agent: ScriptAgent
) -> None:
    engine = make_engine(**{"agent.backend": "script"})
    script_agent.then([A.send_message("Hello")], [A.send_message("Thursday, noted.")])
    iid = engine.start(heartbeat="1h", max_followups=1)
    engine.tick()
    _fire(engine)
    engine.relay.receive(PHONE, "Thursday")
    engine.tick()
    context = script_agent.contexts[-1]
    assert context.reason is TurnReason.FOLLOW_UP
    assert [m.text for m in context.new_messages] == ["Thursday"]
    view = engine.view(iid)
    assert (view.state, view.follow_up_count) == ("WAITING_FOR_REPLY", 0)
    # The contact answered an hour ago: the next silence gets its follow-up.
    engine.clock.advance(timedelta(hours=1))
    script_agent.then([A.send_message("Anything else?")])
    engine.tick()
    assert engine.view(iid).follow_up_count == 1
    assert engine.state(iid) == "WAITING_FOR_REPLY"


def test_the_scripted_agent_answers_a_reply_that_beat_its_follow_up(engine: Harness) -> None:
    iid = engine.start(heartbeat="1h")
    engine.tick()
    _fire(engine)
    engine.relay.receive(PHONE, "Thursday works")
    engine.tick()
    assert engine.todos(iid) == ["completed", "in_progress"]
    assert engine.transcript(iid)[-1] == ("agent", "sent", "What number can the driver call?")


def test_a_firing_leases_the_follow_up_to_its_worker(
    make_engine: Any, script_agent: ScriptAgent
) -> None:
    """The firing transaction leases the follow-up turn (no second claim); another
    worker cannot take it while the lease holds."""
    engine = make_engine(**{"agent.backend": "script"})
    script_agent.then([A.send_message("Hello")])
    iid = engine.start(heartbeat="1h")
    engine.tick()
    engine.clock.advance(timedelta(hours=1))

    lease = heartbeat.Lease("daemon-a", timedelta(minutes=5))
    report = heartbeat.fire_due(engine.relay, 10, lease)

    row = engine.row(iid)
    assert report.claimed == [(iid, row.version)]
    assert (row.state, row.lease_owner, row.turn_attempts) == ("HEARTBEAT_SCHEDULED", "daemon-a", 1)
    assert TurnRunner(engine.relay, "daemon-b").claim(10) == []


def test_a_pulse_told_to_stop_gives_back_the_follow_ups_it_fired(
    make_engine: Any, script_agent: ScriptAgent
) -> None:
    engine = make_engine(**{"agent.backend": "script"})
    script_agent.then([A.send_message("Hello")], [A.send_message("Still there?")])
    iid = engine.start(heartbeat="1h")
    engine.tick()
    engine.clock.advance(timedelta(hours=1))

    report = Pulse(engine.relay, "stopping").run(should_stop=lambda: True)

    assert (report.fired, report.turns) == (1, [])
    row = engine.row(iid)
    assert (row.state, row.lease_owner) == ("HEARTBEAT_SCHEDULED", None)
    # Another worker runs the follow-up at once, not after the lease runs out.
    engine.tick("other")
    assert script_agent.contexts[-1].reason is TurnReason.FOLLOW_UP
    assert engine.state(iid) == "WAITING_FOR_REPLY"


@dataclass
class _BareRuntime:
    """Only what :class:`relay.engine.runtime.Runtime` asks for: no command verbs."""

    store: Any
    config: Any
    clock: Any

    def now(self) -> Any:
        return self.clock.now()


def test_the_follow_up_machinery_runs_on_a_bare_runtime(
    make_engine: Any, script_agent: ScriptAgent
) -> None:
    """Firing, the turn and the delivery need the store, the settings and the clock,
    not a whole Relay."""
    engine = make_engine(**{"agent.backend": "script"})
    script_agent.then([A.send_message("Hello")], [A.send_message("Still there?")])
    iid = engine.start(heartbeat="1h")
    engine.tick()
    engine.clock.advance(timedelta(hours=1))
    bare = _BareRuntime(engine.relay.store, engine.relay.config, engine.clock)

    beats = heartbeat.fire_due(bare, 10, heartbeat.Lease("bare", timedelta(minutes=5)))
    outcomes = TurnRunner(bare, "bare").run_due(10, leased=beats.claimed)
    delivered = Dispatcher(bare, Channels(bare), "bare").deliver_due(10)

    assert [o.reason for o in outcomes] == ["follow_up"]
    assert delivered.sent == 1
    assert engine.transcript(iid)[-1][2] == "Still there?"
