"""Structured answers in turns: recorded with their message, refused back to the agent
(never handed to a person), checked against a result schema, and in the event log."""

from __future__ import annotations

from typing import Any

import pytest

from relay.core.turns import Action
from relay.testing import PHONE, Harness, ScriptAgent

A = Action
TODOS = ["Which day suits you?::date", "Is the address right?::yesno"]


@pytest.fixture
def engine(make_engine: Any, script_agent: ScriptAgent) -> Harness:
    return make_engine(**{"agent.backend": "script"})


def _waiting_for_reply(engine: Harness, agent: ScriptAgent, **start: Any) -> str:
    agent.then([A.mark_todo_item(1, "in_progress"), A.send_message("Which day suits you?")])
    iid = engine.start(todos=TODOS, **start)
    engine.tick()
    engine.relay.receive(PHONE, "Friday the 3rd of May")
    return iid


def test_an_answer_is_recorded_with_the_message_it_came_from(
    engine: Harness, script_agent: ScriptAgent
) -> None:
    iid = _waiting_for_reply(engine, script_agent)
    script_agent.then([A.mark_todo_item(1, "completed", answer="2024-05-03")])
    engine.tick()
    context = script_agent.contexts[-1]
    assert (context.todos[0].answer_kind, context.todos[1].answer_kind) == ("date", "yesno")
    result = engine.relay.result(iid)
    first = result.todos[0]
    assert (first.todo.status, first.todo.answer) == ("completed", "2024-05-03")
    assert first.message is not None and first.message.text == "Friday the 3rd of May"
    assert result.missing_answers == (2,) and not result.final
    kinds = [e.kind for e in engine.relay.events(instance_ids=[iid])]
    assert "answer.recorded" in kinds


def test_a_wrong_answer_is_refused_back_to_the_agent_which_corrects_it(
    engine: Harness, script_agent: ScriptAgent
) -> None:
    iid = _waiting_for_reply(engine, script_agent)
    script_agent.then(
        [A.mark_todo_item(1, "completed", answer="Friday"), A.send_message("Thanks!")],
        [A.mark_todo_item(1, "completed", answer="2024-05-03"), A.send_message("Thanks!")],
    )
    engine.tick()
    first, second = script_agent.contexts[-2:]
    assert first.refused == ()
    assert [r.todo_id for r in second.refused] == [1]
    assert "YYYY-MM-DD" in second.refused[0].error
    assert engine.state(iid) == "WAITING_FOR_REPLY"
    assert engine.relay.result(iid).answers == {"1": "2024-05-03"}
    assert [line["text"] for line in engine.console_lines()][-1] == "Thanks!"


def test_an_answer_still_wrong_is_left_out_and_noted_never_a_hand_off(
    engine: Harness, script_agent: ScriptAgent
) -> None:
    iid = _waiting_for_reply(engine, script_agent)
    wrong = [A.mark_todo_item(2, "completed", answer="perhaps"), A.send_message("Noted.")]
    script_agent.then(wrong, wrong, wrong)
    engine.tick()
    assert len(script_agent.contexts) == 4  # first message, then 1 + 2 asks again
    assert engine.state(iid) == "WAITING_FOR_REPLY"
    view = engine.view(iid)
    assert view.todos[1].status == "pending" and view.todos[1].answer is None
    script_agent.then([A.send_message("Is the address right?")])
    engine.relay.receive(PHONE, "hm")
    engine.tick()
    notes = script_agent.contexts[-1].state["relay:last_turn_notes"]
    assert any("todo 2" in note and "yes or no" in note for note in notes)


def test_the_result_schema_checks_each_answer(engine: Harness, script_agent: ScriptAgent) -> None:
    schema = {
        "type": "object",
        "properties": {"1": {"type": "string", "pattern": "^2024-"}},
        "required": ["1", "2"],
    }
    iid = _waiting_for_reply(engine, script_agent, result_schema=schema)
    script_agent.then(
        [A.mark_todo_item(1, "completed", answer="2025-01-01")],
        [A.mark_todo_item(1, "completed", answer="2024-05-03"), A.end_conversation()],
    )
    engine.tick()
    assert "result schema" in script_agent.contexts[-1].refused[0].error
    assert script_agent.contexts[-1].result_schema == schema
    result = engine.relay.result(iid)
    assert result.final and result.answers == {"1": "2024-05-03"}
    assert not result.complete and any("'2' is a required" in e for e in result.schema_errors)
    assert engine.view(iid).result_incomplete


def test_an_answer_from_a_message_not_in_the_conversation_is_refused(
    engine: Harness, script_agent: ScriptAgent
) -> None:
    iid = _waiting_for_reply(engine, script_agent)
    bad = [A.mark_todo_item(1, "completed", answer="2024-05-03", message_id=9999)]
    script_agent.then(bad, bad, bad)
    engine.tick()
    assert engine.relay.result(iid).answers == {}
    assert "not a message from the contact" in script_agent.contexts[-1].refused[0].error
