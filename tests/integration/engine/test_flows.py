"""Whole conversations through the real engine: store, turns, outbox, console channel."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from relay.core.turns import Action, TurnReason
from relay.testing import OTHER, PHONE, Harness, ScriptAgent

A = Action


def test_start_to_completed_with_the_scripted_agent(engine: Harness) -> None:
    iid = engine.start()
    assert engine.state(iid) == "CREATED"

    report = engine.tick()
    assert [(t.instance_id, t.reason, t.state) for t in report.turns] == [
        (iid, "first_message", "WAITING_FOR_REPLY")
    ]
    assert report.delivery.sent == 1
    assert engine.todos(iid) == ["in_progress", "pending"]
    first = engine.console_lines()
    assert len(first) == 1
    assert first[0]["to"] == PHONE and first[0]["instance_id"] == iid
    assert "order 1042" in first[0]["text"] and "Which day suits you?" in first[0]["text"]

    engine.relay.receive(PHONE, "Thursday works.")
    assert engine.state(iid) == "WAITING_FOR_AGENT"
    engine.tick()
    assert engine.state(iid) == "WAITING_FOR_REPLY"
    assert engine.todos(iid) == ["completed", "in_progress"]

    engine.relay.receive(PHONE, "The driver can call 555-0143.")
    engine.tick()
    view = engine.view(iid)
    assert (view.state, view.end_reason) == ("COMPLETED", "completed")
    assert engine.todos(iid) == ["completed", "completed"]
    assert view.next_heartbeat_at is None and view.ended_at == engine.clock.now()

    transcript = engine.transcript(iid)
    assert [(author, status) for author, status, _ in transcript] == [
        ("agent", "sent"),
        ("contact", "processed"),
        ("agent", "sent"),
        ("contact", "processed"),
        ("agent", "sent"),
    ]
    assert transcript[2][2] == "What number can the driver call?"
    assert transcript[4][2].startswith("Thank you")
    lines = engine.console_lines()
    assert [line["text"] for line in lines] == [t[2] for t in transcript if t[0] == "agent"]
    sent = {m.id: m for m in engine.outbound(iid)}
    assert {line["message_id"] for line in lines} == set(sent)
    assert all(sent[line["message_id"]].attempts == 1 for line in lines)

    assert engine.history(iid) == [
        (None, "CREATED", "start"),
        ("CREATED", "ACTIVE", "agent_sends_first_message"),
        ("ACTIVE", "WAITING_FOR_REPLY", "message_sent"),
        ("WAITING_FOR_REPLY", "WAITING_FOR_AGENT", "contact_replies"),
        ("WAITING_FOR_AGENT", "ACTIVE", "agent_processes_reply"),
        ("ACTIVE", "WAITING_FOR_REPLY", "message_sent"),
        ("WAITING_FOR_REPLY", "WAITING_FOR_AGENT", "contact_replies"),
        ("WAITING_FOR_AGENT", "ACTIVE", "agent_processes_reply"),
        ("ACTIVE", "COMPLETED", "end_conversation"),
    ]
    # The scripted agent keeps each answer in the instance's state.
    assert engine.tick().idle


def test_a_reply_while_paused_is_answered_after_resume(engine: Harness) -> None:
    iid = engine.start()
    engine.tick()
    engine.relay.pause(iid, reason="checking something")
    engine.relay.receive(PHONE, "Friday, please.")
    assert engine.state(iid) == "PAUSED"

    report = engine.tick()
    assert report.turns == [] and report.delivery.sent == 0
    assert engine.transcript(iid)[-1] == ("contact", "received", "Friday, please.")

    assert engine.relay.resume(iid).state == "WAITING_FOR_AGENT"
    engine.tick()
    assert engine.state(iid) == "WAITING_FOR_REPLY"
    assert engine.todos(iid) == ["completed", "in_progress"]
    assert engine.transcript(iid)[-2:] == [
        ("contact", "processed", "Friday, please."),
        ("agent", "sent", "What number can the driver call?"),
    ]
    assert engine.history(iid)[-5:] == [
        ("WAITING_FOR_REPLY", "PAUSED", "pause"),
        ("PAUSED", "WAITING_FOR_REPLY", "resume"),
        ("WAITING_FOR_REPLY", "WAITING_FOR_AGENT", "contact_replies"),
        ("WAITING_FOR_AGENT", "ACTIVE", "agent_processes_reply"),
        ("ACTIVE", "WAITING_FOR_REPLY", "message_sent"),
    ]


def test_a_reply_during_intervention_is_in_the_resume_turn(
    make_engine: Any, script_agent: ScriptAgent
) -> None:
    engine = make_engine(**{"agent.backend": "script"})
    script_agent.then(
        [A.send_message("Hello, which day suits you?")],
        [A.request_human_intervention("the contact asked for a discount")],
        [A.send_message("A colleague approved it. Which day?")],
    )
    iid = engine.start()
    engine.tick()
    engine.relay.receive(PHONE, "Can I get a discount?")
    engine.tick()
    view = engine.view(iid)
    assert (view.state, engine.history(iid)[-1][2]) == (
        "NEEDS_HUMAN_INTERVENTION",
        "request_intervention",
    )
    assert engine.relay.history(iid)[-1].reason == "the contact asked for a discount"

    engine.relay.receive(PHONE, "Hello? Anyone there?")
    engine.relay.receive(PHONE, "Also, Friday would suit me.")
    assert engine.tick().turns == []
    engine.relay.resume(iid)
    engine.tick()

    resume = script_agent.contexts[-1]
    assert resume.reason is TurnReason.RESUME
    assert [m.text for m in resume.new_messages] == [
        "Hello? Anyone there?",
        "Also, Friday would suit me.",
    ]
    assert engine.state(iid) == "WAITING_FOR_REPLY"
    assert [s for _, s, _ in engine.transcript(iid)] == [
        "sent",
        "processed",
        "processed",
        "processed",
        "sent",
    ]


def test_a_queued_instance_starts_in_the_same_tick_the_first_ends(engine: Harness) -> None:
    first = engine.start(todos=["Which day suits you?"])
    second = engine.start(objective="the invoice for order 1042", todos=["Is the VAT id right?"])
    assert engine.state(second) == "QUEUED"
    engine.tick()
    assert engine.state(second) == "QUEUED"

    engine.relay.receive(PHONE, "Thursday.")
    report = engine.tick()
    assert [(t.instance_id, t.reason, t.state) for t in report.turns] == [
        (first, "reply", "COMPLETED"),
        (second, "first_message", "WAITING_FOR_REPLY"),
    ]
    assert report.delivery.sent == 2
    assert engine.history(second)[-3:] == [
        ("QUEUED", "CREATED", "prior_instance_terminal"),
        ("CREATED", "ACTIVE", "agent_sends_first_message"),
        ("ACTIVE", "WAITING_FOR_REPLY", "message_sent"),
    ]
    texts = [line["text"] for line in engine.console_lines()]
    assert len(texts) == 3 and "invoice" in texts[2]

    # The second conversation now owns the contact's replies.
    engine.relay.receive(PHONE, "Yes it is.")
    engine.tick()
    assert engine.view(second).end_reason == "completed"


def test_queued_instances_start_in_creation_order(engine: Harness) -> None:
    first = engine.start(todos=["Which day suits you?"])
    second = engine.start(objective="second", todos=["One?"])
    third = engine.start(objective="third", todos=["Two?"])
    engine.tick()
    engine.relay.cancel(first)
    assert [engine.state(i) for i in (second, third)] == ["CREATED", "QUEUED"]
    engine.tick()
    assert [engine.state(i) for i in (second, third)] == ["WAITING_FOR_REPLY", "QUEUED"]


def test_the_context_has_every_unprocessed_inbound_message(
    make_engine: Any, script_agent: ScriptAgent
) -> None:
    """Replies that arrive mid-follow-up, while paused and while waiting for a human
    are all in the context of the next turn, oldest first, none dropped."""
    engine = make_engine(**{"agent.backend": "script"})
    script_agent.then(
        [A.send_message("Hello?")],
        [A.send_message("Just checking in.")],
        [A.request_human_intervention("I need help")],
        [A.send_message("Back again.")],
    )
    iid = engine.start(heartbeat="1h")
    engine.tick()

    # A heartbeat fires; a reply arrives before the follow-up turn has run.
    engine.clock.advance(timedelta(hours=1))
    from relay.engine.conversation import heartbeat
    assert heartbeat.fire_due(engine.relay, 10).fired == 1
    assert engine.state(iid) == "HEARTBEAT_SCHEDULED"
    engine.relay.receive(PHONE, "mid follow-up")
    engine.tick()
    follow_up = script_agent.contexts[-1]
    assert follow_up.reason is TurnReason.FOLLOW_UP
    assert [m.text for m in follow_up.new_messages] == ["mid follow-up"]
    assert follow_up.follow_up_number == 1

    # That turn's follow-up was sent; the reply it saw was its to answer. Now
    # a reply turn asks for help; replies arrive in NHI and while paused.
    engine.relay.receive(PHONE, "second")
    engine.tick()
    assert engine.state(iid) == "NEEDS_HUMAN_INTERVENTION"
    engine.relay.receive(PHONE, "while waiting for a human")
    engine.relay.pause(iid)
    engine.relay.receive(PHONE, "while paused")
    engine.relay.resume(iid)  # back to NEEDS_HUMAN_INTERVENTION
    assert engine.state(iid) == "NEEDS_HUMAN_INTERVENTION"
    engine.relay.resume(iid)
    engine.tick()
    resume = script_agent.contexts[-1]
    assert resume.reason is TurnReason.RESUME
    assert [m.text for m in resume.new_messages] == ["while waiting for a human", "while paused"]
    assert all(m.direction == "inbound" for m in resume.new_messages)
    assert [m.text for m in resume.transcript][-3:] == [
        "second",
        "while waiting for a human",
        "while paused",
    ]


def test_the_transcript_window_is_bounded(make_engine: Any, script_agent: ScriptAgent) -> None:
    engine = make_engine(**{"agent.backend": "script", "agent.transcript_window": 3})
    script_agent.then(*([A.send_message(f"question {n}")] for n in range(1, 6)))
    iid = engine.start()
    engine.tick()
    for n in range(1, 4):
        engine.relay.receive(PHONE, f"answer {n}")
        engine.tick()
    last = script_agent.contexts[-1]
    assert [m.text for m in last.transcript] == ["answer 2", "question 3", "answer 3"]
    assert [m.text for m in last.new_messages] == ["answer 3"]
    assert len(engine.transcript(iid)) == 7


def test_the_context_carries_the_turn_inputs(make_engine: Any, script_agent: ScriptAgent) -> None:
    engine = make_engine(**{"agent.backend": "script"})
    iid = engine.start(objective="the delivery", todos=["Day?", "Phone?"], max_followups=3)
    engine.tick()
    context = script_agent.contexts[0]
    assert context.instance_id == iid
    assert context.reason is TurnReason.FIRST_MESSAGE
    assert context.objective == "the delivery"
    assert context.contact == PHONE
    assert [(t.id, t.text, t.status) for t in context.todos] == [
        (1, "Day?", "pending"),
        (2, "Phone?", "pending"),
    ]
    assert context.transcript == () and context.new_messages == ()
    assert (context.follow_up_number, context.max_followups) == (0, 3)
    assert context.now == "2026-01-05T12:00:00Z"
    # The agent chose to wait: the instance waits for a reply, with a heartbeat.
    view = engine.view(iid)
    assert view.state == "WAITING_FOR_REPLY"
    assert view.next_heartbeat_at == engine.clock.now() + timedelta(minutes=30)
    assert engine.relay.history(iid)[-1].reason == "the agent chose to wait"


def test_two_contacts_run_side_by_side(engine: Harness) -> None:
    one = engine.start(PHONE, todos=["Day?"])
    two = engine.start(OTHER, todos=["Day?"])
    report = engine.tick()
    assert sorted(t.instance_id for t in report.turns) == sorted([one, two])
    engine.relay.receive(OTHER, "Monday")
    engine.tick()
    assert (engine.state(one), engine.state(two)) == ("WAITING_FOR_REPLY", "COMPLETED")
    assert {line["to"] for line in engine.console_lines()} == {PHONE, OTHER}


def test_an_operator_message_in_intervention_answers_what_was_waiting(engine: Harness) -> None:
    """From NEEDS_HUMAN_INTERVENTION the operator's message is the turn: the messages
    the operator answered are processed, and the conversation waits for the contact
    rather than having the agent answer them a second time."""
    iid = engine.start()
    engine.tick()
    engine.relay.receive(PHONE, "I want to talk to a human")
    engine.tick()
    engine.relay.receive(PHONE, "Hello??")
    assert engine.state(iid) == "NEEDS_HUMAN_INTERVENTION"

    engine.relay.send(iid, "Hi, Sam here. Friday or Monday?")
    view = engine.view(iid)
    assert view.state == "WAITING_FOR_REPLY"
    assert view.next_heartbeat_at == engine.clock.now() + timedelta(minutes=30)
    report = engine.tick()
    assert report.turns == [] and report.delivery.sent == 1
    assert engine.transcript(iid)[-2:] == [
        ("contact", "processed", "Hello??"),
        ("operator", "sent", "Hi, Sam here. Friday or Monday?"),
    ]
    assert engine.history(iid)[-2:] == [
        ("NEEDS_HUMAN_INTERVENTION", "ACTIVE", "manual_send"),
        ("ACTIVE", "WAITING_FOR_REPLY", "message_sent"),
    ]
    # The contact's answer goes to the agent, which carries on.
    engine.relay.receive(PHONE, "Friday")
    engine.tick()
    assert engine.todos(iid) == ["completed", "in_progress"]
