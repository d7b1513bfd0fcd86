"""What an agent may answer, and what happens when it fails or answers badly."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from relay.agents.base import AgentError
from relay.core.turns import Action
from relay.store.models import StateEntry
from relay.testing import OTHER, PHONE, Harness, ScriptAgent, transient

A = Action


@pytest.fixture
def engine(make_engine: Any, script_agent: ScriptAgent) -> Harness:
    return make_engine(**{"agent.backend": "script"})


def _reply_turn(engine: Harness, agent: ScriptAgent, *turn: Any) -> str:
    """Start, send a first message, get a reply, and queue ``turn`` for the reply turn."""
    agent.then([A.mark_todo_item(1, "in_progress"), A.send_message("Which day suits you?")])
    iid = engine.start()
    engine.tick()
    engine.relay.receive(PHONE, "Friday")
    agent.then(*turn)
    return iid


# -- agent errors ---------------------------------------------------------------------------


def test_a_transient_error_is_retried_once(engine: Harness, script_agent: ScriptAgent) -> None:
    script_agent.then(transient("timed out"), [A.send_message("Hello!")])
    iid = engine.start()
    report = engine.tick()
    assert len(script_agent.contexts) == 2
    assert script_agent.contexts[0] == script_agent.contexts[1]
    assert report.turns[0].state == "WAITING_FOR_REPLY"
    assert [line["text"] for line in engine.console_lines()] == ["Hello!"]
    assert "NEEDS_HUMAN_INTERVENTION" not in engine.states(iid)


def test_a_second_transient_error_goes_to_a_person(
    engine: Harness, script_agent: ScriptAgent
) -> None:
    iid = _reply_turn(engine, script_agent, transient("HTTP 502"), transient("HTTP 503"))
    engine.tick()
    assert len(script_agent.contexts) == 3
    view = engine.view(iid)
    assert view.state == "NEEDS_HUMAN_INTERVENTION"
    reason = engine.relay.history(iid)[-1].reason
    assert "HTTP 503" in reason and "retry" in reason
    # The reply the failed turn could not answer waits for the next one.
    assert engine.transcript(iid)[-1] == ("contact", "received", "Friday")
    engine.relay.resume(iid)
    script_agent.then([A.send_message("Sorry for the wait. Friday is fine.")])
    engine.tick()
    assert [m.text for m in script_agent.contexts[-1].new_messages] == ["Friday"]


@pytest.mark.parametrize(
    "error",
    [
        "openai agent: authentication failed (HTTP 401): invalid api key",
        "openai agent: rate limited (HTTP 429): slow down",
    ],
    ids=["auth", "rate-limit"],
)
def test_auth_and_rate_limit_errors_go_to_a_person_at_once(
    engine: Harness, script_agent: ScriptAgent, error: str
) -> None:
    iid = _reply_turn(engine, script_agent, AgentError(error), [A.send_message("never")])
    report = engine.tick()
    assert len(script_agent.contexts) == 2  # the first message and one try at the reply
    assert report.turns[0].state == "NEEDS_HUMAN_INTERVENTION"
    assert engine.relay.history(iid)[-1].reason == f"agent error: {error}"
    assert [line["text"] for line in engine.console_lines()] == ["Which day suits you?"]


def test_an_agent_that_crashes_goes_to_a_person(engine: Harness, script_agent: ScriptAgent) -> None:
    script_agent.then(ZeroDivisionError("division by zero"))
    iid = engine.start()
    engine.tick()
    assert engine.state(iid) == "NEEDS_HUMAN_INTERVENTION"
    assert (
        engine.relay.history(iid)[-1].reason == "agent crashed: ZeroDivisionError: division by zero"
    )
    assert engine.history(iid)[-1][:2] == ("CREATED", "NEEDS_HUMAN_INTERVENTION")


# -- invalid actions ------------------------------------------------------------------------


INVALID = {
    "unknown-todo": (A.mark_todo_item(9, "completed"), "unknown todo id 9"),
    "bad-status": (A.mark_todo_item(2, "done"), "invalid status 'done'"),
    "empty-text": (A.send_message("   "), "text must be non-empty"),
    "bad-delay": (A.schedule_next_heartbeat("soon"), "invalid duration 'soon'"),
    "zero-delay": (A.schedule_next_heartbeat("0s"), "must be greater than zero"),
    "unknown-action": (Action("send_fax", {"to": "x"}), "unknown action 'send_fax'"),
    "empty-key": (A.set_state(" ", 1), "key must be non-empty"),
    "nul-text": (A.send_message("Hello\x00there"), "NUL"),
    "nul-reason": (A.end_conversation("done\x00"), "NUL"),
    "long-key": (A.set_state("k" * 300, 1), "key is longer than"),
    "not-json": (A.set_state("when", timedelta(days=1)), "value must be JSON"),
    "end-and-help": (A.request_human_intervention("help"), "cannot both end"),
}


@pytest.mark.parametrize("bad", list(INVALID), ids=list(INVALID))
def test_an_invalid_action_applies_nothing_of_the_turn(
    engine: Harness, script_agent: ScriptAgent, bad: str
) -> None:
    action, why = INVALID[bad]
    good = [
        A.send_message("Friday it is."),
        A.mark_todo_item(1, "completed"),
        A.set_state("contact:day", "Friday"),
        A.schedule_next_heartbeat("2h"),
        A.end_conversation("done") if bad == "end-and-help" else Action("place_call", {}),
    ]
    iid = _reply_turn(engine, script_agent, [*good, action])
    before = (engine.todos(iid), engine.transcript(iid))
    report = engine.tick()

    view = engine.view(iid)
    assert view.state == "NEEDS_HUMAN_INTERVENTION"
    reason = engine.relay.history(iid)[-1].reason
    assert reason.startswith("invalid agent action: ") and why in reason
    assert report.turns[0].messages == () and report.delivery.sent == 0
    assert (engine.todos(iid), engine.transcript(iid)) == before
    assert engine.transcript(iid)[-1] == ("contact", "received", "Friday")
    assert engine.row(iid).heartbeat_override_seconds is None
    with engine.relay.store.transaction() as session:
        # (relay's own ``system`` entries, such as the unsubscribe key, are not agent state)
        agent_state = select(StateEntry).where(StateEntry.scope != "system")
        assert session.scalars(agent_state).all() == []


# -- the other actions ----------------------------------------------------------------------


def test_schedule_next_heartbeat_sets_the_next_countdown_only(
    engine: Harness, script_agent: ScriptAgent
) -> None:
    iid = _reply_turn(
        engine,
        script_agent,
        [A.send_message("Call you tomorrow?"), A.schedule_next_heartbeat("1d")],
    )
    assert engine.view(iid).next_heartbeat_at is None  # waiting for the agent
    engine.tick()
    now = engine.clock.now()
    assert engine.view(iid).next_heartbeat_at == now + timedelta(days=1)
    assert engine.row(iid).heartbeat_override_seconds is None

    engine.relay.receive(PHONE, "Yes")
    script_agent.then([A.send_message("Great.")])
    engine.tick()
    assert engine.view(iid).next_heartbeat_at == now + timedelta(minutes=30)


def test_a_scheduled_heartbeat_survives_a_pause(engine: Harness, script_agent: ScriptAgent) -> None:
    script_agent.then([A.send_message("Hello"), A.schedule_next_heartbeat(90)])
    iid = engine.start()
    engine.tick()
    start = engine.clock.now()
    assert engine.view(iid).next_heartbeat_at == start + timedelta(seconds=90)
    engine.clock.advance(timedelta(seconds=30))
    engine.relay.pause(iid)
    assert engine.view(iid).heartbeat_remaining_seconds == 60
    engine.clock.advance(timedelta(hours=5))
    engine.relay.resume(iid)
    assert engine.view(iid).next_heartbeat_at == engine.clock.now() + timedelta(seconds=60)


def test_state_is_scoped_and_seen_by_later_turns(
    engine: Harness, script_agent: ScriptAgent
) -> None:
    script_agent.then(
        [
            A.send_message("Hello"),
            A.set_state("app:tone", "formal"),
            A.set_state("contact:name", "Ada"),
            A.set_state("step", 1),
            A.set_state("temp:scratch", "thinking"),
            A.set_state("answers", {"day": None, "tries": [1, 2]}),
        ],
        [A.set_state("step", 2), A.end_conversation("completed")],
    )
    first = engine.start()
    engine.tick()
    engine.relay.receive(PHONE, "Hi")
    engine.tick()
    expected = {
        "app:tone": "formal",
        "contact:name": "Ada",
        "step": 1,
        "answers": {"day": None, "tries": [1, 2]},
    }
    assert script_agent.contexts[1].state == expected
    assert engine.state(first) == "COMPLETED"

    # A later conversation with the same contact sees app: and contact:, not the
    # first instance's own keys; another contact sees only app:.
    second = engine.start(PHONE)
    third = engine.start(OTHER)
    engine.tick()
    seen = {c.instance_id: c.state for c in script_agent.contexts[2:]}
    assert seen[second] == {"app:tone": "formal", "contact:name": "Ada"}
    assert seen[third] == {"app:tone": "formal"}
    with engine.relay.store.transaction() as session:
        agent_state = select(StateEntry).where(StateEntry.scope != "system")
        keys = sorted((e.scope, e.key) for e in session.scalars(agent_state))
    assert keys == [
        ("app", "app:tone"),
        ("contact", "contact:name"),
        ("instance", "answers"),
        ("instance", "step"),
    ]


def test_place_call_is_answered_as_not_available_and_logged(
    engine: Harness, script_agent: ScriptAgent, caplog: pytest.LogCaptureFixture
) -> None:
    script_agent.then([Action("place_call", {"reason": "quicker"}), A.send_message("Hello")])
    iid = engine.start()
    with caplog.at_level(logging.INFO, logger="relay.turns"):
        report = engine.tick()
    (turn,) = report.turns
    assert turn.note == "place_call is not available yet; no call was placed"
    assert turn.state == "WAITING_FOR_REPLY" and turn.messages == ("Hello",)
    assert any(
        "place_call is not available" in r.getMessage() and iid in r.getMessage()
        for r in caplog.records
    )
    # The next turn is told, through its state, that no call was placed.
    script_agent.then([A.send_message("Sorry, I could not call")])
    engine.relay.receive(PHONE, "call me?")
    engine.tick()
    assert script_agent.contexts[-1].state["relay:last_turn_notes"] == [
        "place_call is not available yet; no call was placed"
    ]


def test_ending_without_a_message_completes(engine: Harness, script_agent: ScriptAgent) -> None:
    iid = _reply_turn(engine, script_agent, [A.mark_todo_item(1, "skipped"), A.end_conversation()])
    engine.tick()
    view = engine.view(iid)
    assert (view.state, view.end_reason) == ("COMPLETED", "completed")
    assert engine.todos(iid) == ["skipped", "pending"]
    assert engine.history(iid)[-1] == ("WAITING_FOR_AGENT", "COMPLETED", "end_conversation")


def test_a_farewell_is_delivered_after_the_conversation_ends(
    engine: Harness, script_agent: ScriptAgent
) -> None:
    iid = _reply_turn(engine, script_agent, [A.send_message("Thanks, bye!"), A.end_conversation()])
    report = engine.tick()
    assert report.turns[0].state == "COMPLETED" and report.delivery.sent == 1
    assert engine.transcript(iid)[-1] == ("agent", "sent", "Thanks, bye!")
