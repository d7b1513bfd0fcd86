"""Drafts a person approves (``--approval first|all``): nothing goes out before the
approval, the follow-up countdown starts when it does, a rejection's reason reaches
the agent's next turn, and approval never gets past the delivery gate (opt-out,
pause, cancel), whichever of the two commits first."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest

from relay.core.errors import Refused
from relay.core.turns import Action, TurnContext
from relay.engine.turns.commit import REJECTED_KEY
from relay.engine.verbs import drafts
from relay.testing import PHONE, Harness, ScriptAgent

HOUR = timedelta(hours=1)


def _delivered_to(engine: Harness, contact: str = PHONE) -> list[str]:
    return [line["text"] for line in engine.console_lines() if line["to"] == contact]


def test_nothing_goes_out_and_no_follow_up_counts_until_a_person_approves(
    engine: Harness,
) -> None:
    iid = engine.start(approval="all", heartbeat="1h")
    engine.tick()
    view = engine.view(iid)
    assert (view.state, view.drafts_pending, view.approval) == ("WAITING_FOR_REPLY", 1, "all")
    # No heartbeat is pending while the message has not gone out; the countdown waits whole.
    assert view.next_heartbeat_at is None and view.heartbeat_remaining_seconds == 3600
    assert view.forecast is not None and view.forecast.next.value == "approval"
    (draft,) = drafts.pending(engine.relay)
    assert (draft.instance_id, draft.contact, draft.state) == (iid, PHONE, "WAITING_FOR_REPLY")
    assert [e.data["action"] for e in engine.relay.events(kinds=["draft"])] == ["written"]

    engine.clock.advance(timedelta(days=2))
    report = engine.tick()
    assert (report.fired, report.delivery.sent) == (0, 0)
    assert _delivered_to(engine) == []
    assert drafts.pending(engine.relay)[0].waited_seconds == 2 * 86400

    approved_at = engine.clock.now()
    sent = drafts.approve(engine.relay, draft.id, actor="ann")
    assert (sent.id, sent.status) == (draft.id, "queued")
    engine.tick()
    assert _delivered_to(engine) == [draft.text]
    view = engine.view(iid)
    assert view.next_heartbeat_at == approved_at + HOUR and view.drafts_pending == 0
    assert drafts.pending(engine.relay) == []

    # With `all`, the follow-up is a draft too: written when the hour is up, not sent.
    engine.clock.advance(HOUR + timedelta(seconds=1))
    report = engine.tick()
    assert report.fired == 1 and report.delivery.sent == 0
    assert len(drafts.pending(engine.relay)) == 1 and len(_delivered_to(engine)) == 1
    assert engine.view(iid).next_heartbeat_at is None


def test_first_holds_only_until_one_message_is_approved(engine: Harness) -> None:
    iid = engine.start(approval="first")
    engine.tick()
    (draft,) = drafts.pending(engine.relay)
    drafts.approve(engine.relay, draft.id, actor="ann")
    assert engine.view(iid).approval is None
    engine.tick()
    engine.relay.receive(PHONE, "Thursday works")
    engine.tick()
    assert drafts.pending(engine.relay) == []
    assert len(_delivered_to(engine)) == 2


def test_a_rejection_reaches_the_agent_which_writes_a_new_draft(
    make_engine: Callable[..., Harness], script_agent: ScriptAgent
) -> None:
    engine = make_engine()
    script_agent.then([Action.send_message("Dear Sir, kindly state the day.")])
    script_agent.then([Action.send_message("Hi! Which day suits you?")])
    iid = engine.start(approval="all", agent="script")
    engine.tick()
    (draft,) = drafts.pending(engine.relay)
    rejected = drafts.reject(engine.relay, draft.id, actor="ann", reason="too formal")
    assert rejected.status == "rejected"
    assert [h.event for h in engine.relay.history(iid)][-1] == "draft_rejected"
    assert engine.state(iid) == "ACTIVE"

    engine.tick()
    seen: TurnContext = script_agent.contexts[-1]
    assert seen.state[REJECTED_KEY] == {
        "message_id": draft.id,
        "text": "Dear Sir, kindly state the day.",
        "reason": "too formal",
    }
    # The rejected draft was never said: the agent's transcript leaves it out.
    assert all(m.text != draft.text for m in seen.transcript)
    (second,) = drafts.pending(engine.relay)
    assert second.text == "Hi! Which day suits you?"
    assert engine.state(iid) == "WAITING_FOR_REPLY"
    assert _delivered_to(engine) == []

    # Edited on approval: the edit goes out, the draft stays as written (recorded).
    out = drafts.approve(engine.relay, second.id, actor="ann", text="Hi Ann! Which day suits?")
    assert out.id != second.id and out.note == f"edited from draft {second.id} by ann"
    engine.tick()
    assert _delivered_to(engine) == ["Hi Ann! Which day suits?"]
    statuses = [(m.author, m.status, m.text) for m in engine.relay.transcript(iid)]
    assert statuses == [
        ("agent", "rejected", "Dear Sir, kindly state the day."),
        ("agent", "edited", "Hi! Which day suits you?"),
        ("agent", "sent", "Hi Ann! Which day suits?"),
    ]
    # The next turn no longer carries the rejection.
    engine.relay.receive(PHONE, "Friday")
    engine.tick()
    assert script_agent.contexts[-1].state.get(REJECTED_KEY) is None


def test_a_draft_that_is_no_draft_any_more_is_refused(engine: Harness) -> None:
    engine.start(approval="all")
    engine.tick()
    (draft,) = drafts.pending(engine.relay)
    drafts.approve(engine.relay, draft.id, actor="ann")
    with pytest.raises(Refused, match="is queued, not a draft"):
        drafts.approve(engine.relay, draft.id, actor="ann")
    with pytest.raises(Refused):
        drafts.reject(engine.relay, draft.id, actor="ann", reason="late")


def test_approved_while_paused_waits_for_the_resume(engine: Harness) -> None:
    iid = engine.start(approval="all", heartbeat="1h")
    engine.tick()
    (draft,) = drafts.pending(engine.relay)
    engine.relay.pause(iid)
    drafts.approve(engine.relay, draft.id, actor="ann")
    assert engine.tick().delivery.sent == 0
    assert _delivered_to(engine) == []
    view = engine.view(iid)
    assert view.next_heartbeat_at is None and view.heartbeat_remaining_seconds == 3600
    engine.relay.resume(iid)
    engine.tick()
    assert _delivered_to(engine) == [draft.text]
    assert engine.view(iid).next_heartbeat_at == engine.clock.now() + HOUR


# -- approval racing an opt-out or a cancel -------------------------------------------

ROUNDS = 3


def _opt_out(relay: Any, iid: str) -> None:
    relay.receive(PHONE, "STOP")


def _cancel(relay: Any, iid: str) -> None:
    relay.cancel(iid)


def _approve(relay: Any, message_id: int) -> str:
    try:
        drafts.approve(relay, message_id, actor="ann")
        return "approved"
    except Refused:
        return "refused"


def _together(
    relay: Any, second: Any, message_id: int, iid: str, other: Callable[[Any, str], None]
) -> str:
    """Approve on one connection and opt out (or cancel) on another, released at once."""
    barrier = threading.Barrier(2)

    def approving() -> str:
        barrier.wait(timeout=10)
        return _approve(relay, message_id)

    def othering() -> None:
        barrier.wait(timeout=10)
        other(second, iid)

    with ThreadPoolExecutor(max_workers=2) as pool:
        approved = pool.submit(approving)
        pool.submit(othering).result(timeout=60)
        return approved.result(timeout=60)


@pytest.mark.parametrize("other", [_opt_out, _cancel], ids=["opt-out", "cancel"])
@pytest.mark.parametrize("order", ["approve-first", "other-first", "together"])
def test_approval_never_gets_past_an_opt_out_or_a_cancel(
    make_engine: Callable[..., Harness],
    make_relay: Callable[..., Any],
    db_url: str,
    clock: Any,
    other: Callable[[Any, str], None],
    order: str,
) -> None:
    engine = make_engine()
    second = make_relay(db_url, clock, **{"channels.console.echo": False})
    for round_ in range(ROUNDS if order == "together" else 1):
        if round_:
            engine.relay.receive(PHONE, "START")  # opt in again for the next round
        iid = engine.start(approval="all")
        engine.tick()
        (draft,) = drafts.pending(engine.relay, iid)
        if order == "approve-first":
            outcomes = [_approve(engine.relay, draft.id)]
            other(second, iid)
        elif order == "other-first":
            other(second, iid)
            outcomes = [_approve(engine.relay, draft.id)]
        else:
            outcomes = [_together(engine.relay, second, draft.id, iid, other)]
        if order == "other-first":
            assert outcomes == ["refused"]
        engine.tick()
        assert _delivered_to(engine) == [], (order, outcomes)
        assert engine.message(draft.id).status in ("blocked", "cancelled")
        assert engine.view(iid).state in ("COMPLETED", "FAILED")
