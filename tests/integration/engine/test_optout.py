"""Opt-outs: the live conversation ends, queued ones fail, nothing more is delivered,
and only an opt-in (from the contact or the operator) lets relay write again."""

from __future__ import annotations

from typing import Any

import pytest

from relay.core.errors import OptedOut
from relay.testing import OTHER, PHONE, Harness


def test_stop_mid_conversation_ends_everything_for_the_contact(engine: Harness) -> None:
    live = engine.start()
    queued = engine.start(objective="the invoice")
    paused_queued = engine.start(objective="the survey")
    engine.relay.pause(paused_queued)
    other = engine.start(OTHER)
    engine.tick()
    engine.relay.receive(PHONE, "Thursday")
    engine.tick()
    # An operator message queued before the opt-out, not delivered yet.
    operator = engine.relay.send(live, "Also: is the gate code still 1234?")
    assert operator.status == "queued"

    inbound = engine.relay.receive(PHONE, "Stop. Thank you")
    assert inbound.status == "processed"

    view = engine.view(live)
    assert (view.state, view.end_reason, view.failure_reason) == ("COMPLETED", "opted_out", None)
    last = engine.relay.history(live)[-1]
    assert (last.from_state, last.event, last.actor) == (
        "WAITING_FOR_REPLY",
        "contact_opted_out",
        "contact",
    )
    for iid in (queued, paused_queued):
        view = engine.view(iid)
        assert (view.state, view.failure_reason) == ("FAILED", "opted_out")
    assert engine.state(other) == "WAITING_FOR_REPLY"
    assert engine.message(operator.id).status == "blocked"

    report = engine.tick()
    assert report.turns == [] and report.delivery.sent == 0
    assert [m.status for m in engine.outbound(live)] == ["sent", "sent", "blocked"]
    assert [line["to"] for line in engine.console_lines()] == [PHONE, OTHER, PHONE]

    contact = engine.relay.contact(PHONE)
    assert contact.opted_out_at == engine.clock.now()
    assert (contact.live_instance, contact.queued) == (None, ())
    with pytest.raises(OptedOut) as refused:
        engine.start()
    assert refused.value.exit_code == 2

    # "START" from the contact lets a new conversation begin.
    assert engine.relay.receive(PHONE, "START").status == "processed"
    assert engine.relay.contact(PHONE).opted_out_at is None
    again = engine.start(objective="a fresh start")
    engine.tick()
    assert engine.state(again) == "WAITING_FOR_REPLY"
    assert engine.outbound(again)[0].status == "sent"


@pytest.mark.parametrize("where", ["PAUSED", "NEEDS_HUMAN_INTERVENTION", "CREATED"])
def test_an_opt_out_ends_the_conversation_in_any_live_state(engine: Harness, where: str) -> None:
    iid = engine.start()
    if where != "CREATED":
        engine.tick()
    if where == "PAUSED":
        engine.relay.pause(iid)
    elif where == "NEEDS_HUMAN_INTERVENTION":
        engine.relay.receive(PHONE, "I want to talk to a human")
        engine.tick()
    assert engine.state(iid) == where
    engine.relay.receive(PHONE, "unsubscribe")
    view = engine.view(iid)
    assert (view.state, view.end_reason, view.previous_state) == ("COMPLETED", "opted_out", None)
    assert engine.tick().turns == []


def test_a_word_in_a_longer_reply_is_not_an_opt_out(engine: Harness) -> None:
    iid = engine.start()
    engine.tick()
    engine.relay.receive(PHONE, "Please don't stop the delivery, Thursday is fine for it")
    assert engine.state(iid) == "WAITING_FOR_AGENT"
    assert engine.relay.contact(PHONE).opted_out_at is None


def test_the_keywords_are_configurable(make_engine: Any) -> None:
    engine = make_engine(**{"optout.keywords": "HALT, Basta", "optout.optin_keywords": "ALLOW"})
    iid = engine.start()
    engine.tick()
    engine.relay.receive(PHONE, "STOP")
    assert engine.state(iid) == "WAITING_FOR_AGENT"  # an answer like any other now
    engine.relay.receive(PHONE, "Basta!")
    assert engine.view(iid).end_reason == "opted_out"
    engine.relay.receive(PHONE, "START")
    assert engine.relay.contact(PHONE).opted_out_at is not None
    engine.relay.receive(PHONE, "allow")
    assert engine.relay.contact(PHONE).opted_out_at is None


def test_an_operator_opt_out_and_opt_in(engine: Harness) -> None:
    iid = engine.start()
    engine.tick()
    view = engine.relay.opt_out(PHONE, reason="asked by phone")
    assert view.opted_out_at is not None and view.live_instance is None
    assert engine.view(iid).end_reason == "opted_out"
    assert engine.relay.history(iid)[-1].event == "contact_opted_out"
    engine.relay.opt_in(PHONE)
    assert engine.state(engine.start()) == "CREATED"
