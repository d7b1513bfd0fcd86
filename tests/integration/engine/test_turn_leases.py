"""Turns run outside any transaction under a lease: the operator wins a race, and a
turn whose process died is run again after its lease expires, exactly once."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest

from relay.core.turns import Action
from relay.engine.turns.runner import MAX_TURN_ATTEMPTS, TurnRunner
from relay.runner.pulse import PulseReport
from relay.testing import PHONE, Harness, ScriptAgent

A = Action
WAIT = 20


def _hold_turn(engine: Harness, agent: ScriptAgent) -> tuple[Any, threading.Event]:
    """Start a tick in a thread and return once its agent is running (held at a gate)."""
    gate = threading.Event()
    agent.gate = gate
    agent.entered.clear()
    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(engine.tick, "worker")
    pool.shutdown(wait=False)
    assert agent.entered.wait(WAIT), "the turn never reached the agent"
    return future, gate


def _finish(future: Any, gate: threading.Event) -> PulseReport:
    gate.set()
    return future.result(timeout=WAIT)


@pytest.fixture
def scripted(make_engine: Any, script_agent: ScriptAgent) -> tuple[Harness, Harness]:
    """Two Relays on one database: the worker's and the operator's (another process)."""
    settings = {"agent.backend": "script"}
    return make_engine(**settings), make_engine(**settings)


def test_pause_during_a_first_turn_sends_nothing(
    scripted: tuple[Harness, Harness], script_agent: ScriptAgent
) -> None:
    worker, operator = scripted
    script_agent.then(
        [A.send_message("Hello!"), A.mark_todo_item(1, "in_progress"), A.set_state("k", 1)]
    )
    iid = worker.start()
    future, gate = _hold_turn(worker, script_agent)
    assert operator.relay.pause(iid, reason="wait").state == "PAUSED"
    report = _finish(future, gate)

    assert [(t.instance_id, t.discarded) for t in report.turns] == [(iid, True)]
    assert report.delivery.sent == 0
    assert operator.state(iid) == "PAUSED"
    assert operator.transcript(iid) == []
    assert operator.todos(iid) == ["pending", "pending"]
    assert operator.console_lines() == []
    assert operator.history(iid)[-1] == ("CREATED", "PAUSED", "pause")
    assert operator.tick().turns == []

    # After resume the turn runs again and this time it counts.
    script_agent.gate = None
    script_agent.then([A.send_message("Hello again!")])
    operator.relay.resume(iid)
    operator.tick()
    assert operator.state(iid) == "WAITING_FOR_REPLY"
    assert [line["text"] for line in operator.console_lines()] == ["Hello again!"]


def test_pause_during_a_reply_turn_keeps_the_reply_for_later(
    scripted: tuple[Harness, Harness], script_agent: ScriptAgent
) -> None:
    worker, operator = scripted
    script_agent.then([A.send_message("Which day?")], [A.send_message("Great, noted.")])
    iid = worker.start()
    worker.tick()
    worker.relay.receive(PHONE, "Friday")
    future, gate = _hold_turn(worker, script_agent)
    operator.relay.pause(iid)
    report = _finish(future, gate)

    assert report.turns[0].discarded and report.delivery.sent == 0
    assert operator.state(iid) == "PAUSED"
    assert operator.transcript(iid)[-1] == ("contact", "received", "Friday")
    assert len(operator.console_lines()) == 1

    script_agent.gate = None
    script_agent.then([A.send_message("Friday it is.")])
    operator.relay.resume(iid)
    operator.tick()
    assert [m.text for m in script_agent.contexts[-1].new_messages] == ["Friday"]
    assert [line["text"] for line in operator.console_lines()] == ["Which day?", "Friday it is."]


def test_cancel_during_a_turn_sends_nothing(
    scripted: tuple[Harness, Harness], script_agent: ScriptAgent
) -> None:
    worker, operator = scripted
    script_agent.then([A.send_message("Hello!"), A.end_conversation("done")])
    iid = worker.start()
    future, gate = _hold_turn(worker, script_agent)
    operator.relay.cancel(iid)
    report = _finish(future, gate)
    assert report.turns[0].discarded
    view = operator.view(iid)
    assert (view.state, view.failure_reason, view.end_reason) == ("FAILED", "cancelled", None)
    assert operator.transcript(iid) == [] and operator.console_lines() == []


def test_an_opt_out_during_a_turn_sends_nothing(
    scripted: tuple[Harness, Harness], script_agent: ScriptAgent
) -> None:
    worker, operator = scripted
    script_agent.then([A.send_message("Which day?")], [A.send_message("Noted, Friday.")])
    iid = worker.start()
    worker.tick()
    worker.relay.receive(PHONE, "Friday")
    future, gate = _hold_turn(worker, script_agent)
    operator.relay.receive(PHONE, "STOP")
    report = _finish(future, gate)
    assert report.turns[0].discarded and report.delivery.sent == 0
    assert operator.view(iid).end_reason == "opted_out"
    assert [m.text for m in operator.outbound(iid)] == ["Which day?"]


def test_a_reply_that_arrives_during_a_turn_is_answered_next(
    scripted: tuple[Harness, Harness], script_agent: ScriptAgent
) -> None:
    """A reply does not change the instance mid-turn (the turn still commits), but
    it is not marked processed by a turn that never saw it: the next turn gets it."""
    worker, operator = scripted
    script_agent.then([A.send_message("Which day?")], [A.send_message("Noted Friday.")])
    iid = worker.start()
    worker.tick()
    worker.relay.receive(PHONE, "Friday")
    future, gate = _hold_turn(worker, script_agent)
    operator.relay.receive(PHONE, "Actually, Saturday")
    report = _finish(future, gate)
    assert not report.turns[0].discarded
    assert report.turns[0].state == "WAITING_FOR_AGENT"
    assert operator.transcript(iid)[-3:] == [
        ("contact", "processed", "Friday"),
        ("contact", "received", "Actually, Saturday"),
        ("agent", "sent", "Noted Friday."),
    ]
    script_agent.gate = None
    script_agent.then([A.send_message("Saturday then.")])
    operator.tick()
    assert [m.text for m in script_agent.contexts[-1].new_messages] == ["Actually, Saturday"]
    assert operator.state(iid) == "WAITING_FOR_REPLY"


def test_a_reply_during_the_final_turn_makes_the_agent_reconsider(
    scripted: tuple[Harness, Harness], script_agent: ScriptAgent
) -> None:
    """The agent decides to end the conversation while the contact writes again:
    the ending is dropped and the turn runs again with the new message, instead of
    leaving it unanswered on a completed conversation (issue 8, item 4)."""
    worker, operator = scripted
    script_agent.then(
        [A.send_message("Which day?")],
        [A.send_message("Friday it is, goodbye."), A.end_conversation("done")],
    )
    iid = worker.start()
    worker.tick()
    worker.relay.receive(PHONE, "Friday")
    future, gate = _hold_turn(worker, script_agent)
    operator.relay.receive(PHONE, "Wait, one more question")
    report = _finish(future, gate)

    first = report.turns[0]
    assert first.discarded and "runs again" in (first.note or "")
    assert operator.state(iid) == "WAITING_FOR_AGENT"

    script_agent.gate = None
    script_agent.then([A.send_message("Sure, ask away.")])
    operator.tick()
    assert [m.text for m in script_agent.contexts[-1].new_messages] == [
        "Friday",
        "Wait, one more question",
    ]
    assert operator.state(iid) == "WAITING_FOR_REPLY"
    said = [text for author, _, text in operator.transcript(iid) if author == "agent"]
    assert said == ["Which day?", "Sure, ask away."]


def test_a_killed_turn_is_retried_after_its_lease_and_delivered_once(
    make_engine: Any, script_agent: ScriptAgent
) -> None:
    engine = make_engine(**{"agent.backend": "script", "turns.lease": "2m"})
    script_agent.then(lambda c: [A.send_message(f"Hello, attempt {len(script_agent.contexts)}")])
    iid = engine.start()

    # A worker claims the turn and dies before committing anything.
    dead = TurnRunner(engine.relay, "dead-worker")
    claimed = dead.claim(10)
    assert [c[0] for c in claimed] == [iid]
    assert engine.row(iid).lease_owner == "dead-worker"

    # While the lease holds, nobody else runs the turn.
    engine.clock.advance(timedelta(minutes=1, seconds=59))
    assert engine.tick().turns == []
    assert script_agent.contexts == []

    engine.clock.advance(timedelta(seconds=1))
    report = engine.tick("survivor")
    assert [(t.instance_id, t.reason, t.state) for t in report.turns] == [
        (iid, "first_message", "WAITING_FOR_REPLY")
    ]
    assert report.delivery.sent == 1
    assert engine.row(iid).lease_owner is None

    # The dead worker comes back to life and finishes its stale claim: discarded.
    stale = dead.run_claimed(*claimed[0])
    assert stale.discarded
    assert engine.tick().delivery.sent == 0
    assert [m.text for m in engine.outbound(iid)] == ["Hello, attempt 1"]
    assert [line["text"] for line in engine.console_lines()] == ["Hello, attempt 1"]
    assert engine.history(iid)[1:] == [
        ("CREATED", "ACTIVE", "agent_sends_first_message"),
        ("ACTIVE", "WAITING_FOR_REPLY", "message_sent"),
    ]


def test_a_slow_worker_whose_lease_ran_out_loses_to_the_new_claim(
    make_engine: Any, script_agent: ScriptAgent
) -> None:
    engine = make_engine(**{"agent.backend": "script", "turns.lease": "1m"})
    script_agent.then([A.send_message("Hello")], [A.send_message("Hello, twice")])
    iid = engine.start()
    slow = TurnRunner(engine.relay, "slow")
    claimed = slow.claim(1)
    engine.clock.advance(timedelta(minutes=2))
    fresh = TurnRunner(engine.relay, "fresh")
    reclaimed = fresh.claim(1)
    assert [c[0] for c in reclaimed] == [iid]
    # The slow worker gets to it first, but its lease is no longer its own.
    assert slow.run_claimed(*claimed[0]).discarded
    assert not fresh.run_claimed(*reclaimed[0]).discarded
    engine.tick()
    assert len(script_agent.contexts) == 1
    assert [line["text"] for line in engine.console_lines()] == ["Hello"]


def test_a_leased_turn_is_not_claimed_twice(make_engine: Any, script_agent: ScriptAgent) -> None:
    engine = make_engine(**{"agent.backend": "script"})
    engine.start()
    assert len(TurnRunner(engine.relay, "a").claim(10)) == 1
    assert TurnRunner(engine.relay, "b").claim(10) == []


def test_a_turn_that_keeps_dying_goes_to_a_human(
    make_engine: Any, script_agent: ScriptAgent
) -> None:
    engine = make_engine(**{"agent.backend": "script", "turns.lease": "1m"})
    iid = engine.start()
    for n in range(MAX_TURN_ATTEMPTS):
        assert len(TurnRunner(engine.relay, f"doomed-{n}").claim(1)) == 1
        engine.clock.advance(timedelta(minutes=1))
    report = engine.tick()
    view = engine.view(iid)
    assert view.state == "NEEDS_HUMAN_INTERVENTION"
    assert f"started {MAX_TURN_ATTEMPTS} times" in (report.turns[0].note or "")
    assert script_agent.contexts == []
    # A person resumes it: the count starts again and the turn runs.
    engine.relay.resume(iid)
    script_agent.then([A.send_message("Finally.")])
    engine.tick()
    assert engine.state(iid) == "WAITING_FOR_REPLY"


def test_a_worker_that_lost_its_claim_does_not_run_the_agent(
    make_engine: Any, script_agent: ScriptAgent
) -> None:
    """Turns in a claimed batch run one after another; a turn further down whose
    lease ran out and was claimed by another worker is not run (no wasted model
    call, no side effects of a command agent) by the worker that lost it."""
    engine = make_engine(**{"agent.backend": "script", "turns.lease": "1m"})
    script_agent.then([A.send_message("Which day?")], [A.send_message("Friday, noted.")])
    engine.start()
    engine.tick()
    engine.relay.receive(PHONE, "Friday")
    slow = TurnRunner(engine.relay, "slow")
    claimed = slow.claim(1)
    engine.clock.advance(timedelta(minutes=2))
    fresh = TurnRunner(engine.relay, "fresh")
    reclaimed = fresh.claim(1)
    assert slow.run_claimed(*claimed[0]).discarded
    assert len(script_agent.contexts) == 1  # only the first message's
    assert fresh.run_claimed(*reclaimed[0]).state == "WAITING_FOR_REPLY"
    assert [m.text for m in script_agent.contexts[-1].new_messages] == ["Friday"]
