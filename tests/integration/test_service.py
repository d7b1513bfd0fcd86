"""The service layer (relay's Python API) on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from relay.core.errors import Ambiguous, InvalidInput, NotFound, Refused
from relay.core.states import Event, State
from relay.store.models import Contact, EventRow, Instance, Message

E = Event
PHONE = "+15551230001"
OTHER = "+15551230002"


def start(relay: Any, contact: str = PHONE, objective: str = "Confirm the date", **kw: Any) -> Any:
    return relay.start(contact, objective, kw.pop("todos", ["Ask for the date"]), **kw)


def states(relay: Any, *ids: str) -> list[str]:
    return [relay.get(i).state for i in ids]


def history(relay: Any, instance_id: str) -> list[tuple[str | None, str, str]]:
    return [(r.from_state, r.to_state, r.event) for r in relay.history(instance_id)]


def count(relay: Any, model: Any, *where: Any) -> int:
    with relay.store.transaction() as session:
        return int(session.scalar(select(func.count()).select_from(model).where(*where)) or 0)


# -- start ----------------------------------------------------------------------------------------


def test_start_creates_a_created_instance(relay_api: Any, clock: Any) -> None:
    view = relay_api.start(
        "+1 555 123 0001", "  Confirm the delivery date ", ["Ask for the date", "Confirm address"]
    )
    assert view.state == "CREATED"
    assert view.previous_state is None
    assert view.contact == PHONE
    assert view.objective == "Confirm the delivery date"
    assert [(t.id, t.text, t.status) for t in view.todos] == [
        (1, "Ask for the date", "pending"),
        (2, "Confirm address", "pending"),
    ]
    assert (view.follow_up_count, view.max_followups) == (0, 5)
    assert view.heartbeat_seconds == 30 * 60
    assert view.created_at == view.updated_at == clock.now()
    assert view.failure_reason is None and view.ended_at is None
    assert len(view.id) >= 4 and view.id.isalnum() and view.id == view.id.lower()
    assert history(relay_api, view.id) == [(None, "CREATED", "start")]


def test_start_takes_heartbeat_and_max_followups(relay_api: Any) -> None:
    view = start(relay_api, heartbeat="2h", max_followups=3)
    assert (view.heartbeat_seconds, view.max_followups) == (7200, 3)
    view = start(relay_api, OTHER, heartbeat=timedelta(seconds=90), max_followups=0)
    assert (view.heartbeat_seconds, view.max_followups) == (90, 0)


def test_defaults_come_from_the_configuration(make_relay: Any, db_url: str, clock: Any) -> None:
    relay = make_relay(db_url, clock, **{"defaults.heartbeat": "45m", "defaults.max_followups": 2})
    view = start(relay)
    assert (view.heartbeat_seconds, view.max_followups) == (2700, 2)


def test_a_second_start_for_a_busy_contact_is_queued(relay_api: Any) -> None:
    first = start(relay_api)
    second = start(relay_api, "(555) 123-0001")
    assert (first.state, second.state) == ("CREATED", "QUEUED")
    assert second.contact == first.contact == PHONE
    assert history(relay_api, second.id) == [
        (None, "CREATED", "start"),
        ("CREATED", "QUEUED", "contact_has_active_instance"),
    ]
    assert start(relay_api, OTHER).state == "CREATED"


def test_the_same_person_written_two_ways_is_one_contact(relay_api: Any) -> None:
    start(relay_api, "+1 555 123 0001")
    start(relay_api, "+15551230001")
    start(relay_api, "Ann@Example.COM")
    start(relay_api, "ann@example.com")
    assert count(relay_api, Contact) == 2
    assert {v.contact for v in relay_api.instances()} == {PHONE, "ann@example.com"}
    states = sorted(v.state for v in relay_api.instances())
    assert states == ["CREATED", "CREATED", "QUEUED", "QUEUED"]


@pytest.mark.parametrize(
    ("contact", "objective", "todos", "options", "match"),
    [
        ("not a contact", "obj", ["t"], {}, "invalid contact"),
        ("ann@", "obj", ["t"], {}, "invalid email"),
        (PHONE, "   ", ["t"], {}, "objective"),
        (PHONE, "obj", [""], {}, "todo"),
        (PHONE, "obj", ["t"], {"heartbeat": "soon"}, "duration"),
        (PHONE, "obj", ["t"], {"heartbeat": "0s"}, "duration"),
        (PHONE, "obj", ["t"], {"max_followups": -1}, "max_followups"),
    ],
)
def test_start_refuses_bad_input_and_writes_nothing(
    relay_api: Any, contact: str, objective: str, todos: list[str], options: dict, match: str
) -> None:
    with pytest.raises(InvalidInput, match=match):
        relay_api.start(contact, objective, todos, **options)
    assert count(relay_api, Instance) == 0
    assert count(relay_api, EventRow) == 0


# -- reads ----------------------------------------------------------------------------------------


def test_list_is_newest_first_with_filters_and_limit(relay_api: Any, clock: Any) -> None:
    a = start(relay_api, PHONE)
    clock.advance(60)
    b = start(relay_api, OTHER)
    clock.advance(60)
    c = start(relay_api, "+1 555 123 0001")
    assert [v.id for v in relay_api.instances()] == [c.id, b.id, a.id]
    assert [v.id for v in relay_api.instances(limit=2)] == [c.id, b.id]
    assert [v.id for v in relay_api.instances(state="CREATED")] == [b.id, a.id]
    assert [v.id for v in relay_api.instances(state="queued")] == [c.id]
    assert [v.id for v in relay_api.instances(contact="555-123-0001")] == [c.id, a.id]
    assert [v.id for v in relay_api.instances(contact=OTHER, state="QUEUED")] == []
    assert [v.id for v in relay_api.instances(contact="+15559999999")] == []
    assert [len(v.todos) for v in relay_api.instances()] == [1, 1, 1]


def test_list_refuses_a_bad_state_and_limit(relay_api: Any) -> None:
    with pytest.raises(InvalidInput, match="unknown state 'RUNNING'"):
        relay_api.instances(state="RUNNING")
    with pytest.raises(InvalidInput, match="limit"):
        relay_api.instances(limit=0)


def test_get_shows_the_instance_fields(relay_api: Any, clock: Any, drive: Any) -> None:
    created = start(relay_api, heartbeat="1h", max_followups=4, todos=["One", "Two"])
    clock.advance(30)
    drive(relay_api, created.id, E.AGENT_SENDS_FIRST_MESSAGE, E.MESSAGE_SENT)
    view = relay_api.get(created.id[:4])
    assert view.id == created.id
    assert view.state == "WAITING_FOR_REPLY"
    assert view.objective == "Confirm the date"
    assert [t.text for t in view.todos] == ["One", "Two"]
    assert (view.follow_up_count, view.max_followups) == (0, 4)
    assert view.next_heartbeat_at == clock.now() + timedelta(hours=1)
    assert view.created_at == clock.now() - timedelta(seconds=30)
    assert view.updated_at == clock.now()
    data = view.to_json()
    assert data["next_heartbeat_at"] == (clock.now() + timedelta(hours=1)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )


def test_prefix_resolution(relay_api: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ids: Iterator[str] = iter(["abc2345", "abc6789", "abd2345"])
    monkeypatch.setattr("relay.engine.verbs.starting.new_instance_id", lambda: next(ids))
    start(relay_api, PHONE)
    start(relay_api, OTHER)
    start(relay_api, "+15551230003")
    assert relay_api.get("abd").id == "abd2345"
    assert relay_api.get("ABC6").id == "abc6789"
    assert relay_api.get(" abc2345 ").id == "abc2345"
    with pytest.raises(Ambiguous, match="ambiguous"):
        relay_api.get("abc")
    with pytest.raises(Ambiguous):
        relay_api.pause("ab")
    with pytest.raises(NotFound, match="zz"):
        relay_api.get("zz")
    with pytest.raises(NotFound):
        relay_api.get("")
    with pytest.raises(NotFound):
        relay_api.get("a%")  # LIKE wildcards are taken literally
    with pytest.raises(NotFound):
        relay_api.get("ab_")
    assert relay_api.get("abc2345").state == "CREATED"


# -- pause / resume / cancel ----------------------------------------------------------------------


def test_pause_records_the_prior_state_and_resume_restores_it(relay_api: Any) -> None:
    view = start(relay_api)
    paused = relay_api.pause(view.id, reason="holiday")
    assert (paused.state, paused.previous_state) == ("PAUSED", "CREATED")
    resumed = relay_api.resume(view.id)
    assert (resumed.state, resumed.previous_state) == ("CREATED", None)
    rows = relay_api.history(view.id)
    assert [(r.from_state, r.to_state, r.event) for r in rows[1:]] == [
        ("CREATED", "PAUSED", "pause"),
        ("PAUSED", "CREATED", "resume"),
    ]
    assert (rows[1].actor, rows[1].reason) == ("operator", "holiday")


@pytest.mark.parametrize(
    "events",
    [
        (),
        (E.AGENT_SENDS_FIRST_MESSAGE,),
        (E.AGENT_SENDS_FIRST_MESSAGE, E.MESSAGE_SENT),
        (E.AGENT_SENDS_FIRST_MESSAGE, E.MESSAGE_SENT, E.CONTACT_REPLIES),
        (E.AGENT_SENDS_FIRST_MESSAGE, E.MESSAGE_SENT, E.HEARTBEAT_FIRES),
        (E.REQUEST_INTERVENTION,),
    ],
    ids=lambda events: "-".join(e.value for e in events) or "created",
)
def test_pause_and_resume_from_every_live_state(relay_api: Any, drive: Any, events: tuple) -> None:
    view = start(relay_api)
    before = drive(relay_api, view.id, *events)
    paused = relay_api.pause(view.id)
    assert (paused.state, paused.previous_state) == ("PAUSED", before)
    if before == "NEEDS_HUMAN_INTERVENTION":
        # resume from PAUSED goes back to NEEDS_HUMAN_INTERVENTION; a second one to ACTIVE
        assert relay_api.resume(view.id).state == before
        assert relay_api.resume(view.id).state == "ACTIVE"
    else:
        assert relay_api.resume(view.id).state == before


def test_pause_and_resume_refusals(relay_api: Any) -> None:
    view = start(relay_api)
    with pytest.raises(Refused, match=r"is CREATED; resume is not allowed"):
        relay_api.resume(view.id)
    relay_api.pause(view.id)
    with pytest.raises(Refused, match=r"is PAUSED; pause is not allowed \(allowed: .*resume"):
        relay_api.pause(view.id)
    assert relay_api.get(view.id).previous_state == "CREATED"


def test_needs_human_intervention_resumes_to_active(relay_api: Any, drive: Any) -> None:
    view = start(relay_api)
    assert drive(relay_api, view.id, E.REQUEST_INTERVENTION) == "NEEDS_HUMAN_INTERVENTION"
    assert relay_api.resume(view.id).state == "ACTIVE"
    assert history(relay_api, view.id)[-1] == ("NEEDS_HUMAN_INTERVENTION", "ACTIVE", "resume")


def test_cancel_fails_the_instance_with_reason_cancelled(relay_api: Any, clock: Any) -> None:
    view = start(relay_api)
    clock.advance(5)
    cancelled = relay_api.cancel(view.id, reason="wrong number")
    assert cancelled.state == "FAILED"
    assert cancelled.failure_reason == "cancelled"
    assert cancelled.ended_at == clock.now()
    last = relay_api.history(view.id)[-1]
    assert (last.from_state, last.to_state, last.event, last.reason) == (
        "CREATED",
        "FAILED",
        "cancel",
        "wrong number",
    )
    with pytest.raises(Refused, match="FAILED"):
        relay_api.cancel(view.id)
    with pytest.raises(Refused, match="FAILED"):
        relay_api.resume(view.id)


def test_cancel_a_paused_instance(relay_api: Any) -> None:
    view = start(relay_api)
    relay_api.pause(view.id)
    cancelled = relay_api.cancel(view.id)
    assert (cancelled.state, cancelled.previous_state) == ("FAILED", None)


def test_cancel_withdraws_queued_outbound_messages(relay_api: Any, drive: Any) -> None:
    view = start(relay_api)
    drive(relay_api, view.id, E.AGENT_SENDS_FIRST_MESSAGE, E.MESSAGE_SENT)
    message = relay_api.send(view.id, "Are you there?")
    assert message.status == "queued"
    relay_api.cancel(view.id)
    assert [m.status for m in relay_api.transcript(view.id)] == ["cancelled"]
    assert relay_api.status().outbox_pending == 0


# -- send -----------------------------------------------------------------------------------------


def test_send_records_an_operator_message(relay_api: Any, clock: Any) -> None:
    view = start(relay_api)
    message = relay_api.send(view.id, "  Hello from a person  ")
    assert (message.direction, message.author, message.status) == ("outbound", "operator", "queued")
    assert message.text == "Hello from a person"
    assert message.instance_id == view.id and message.contact == PHONE
    assert message.created_at == clock.now()
    assert relay_api.get(view.id).state == "CREATED"
    assert relay_api.status().outbox_pending == 1
    with pytest.raises(InvalidInput):
        relay_api.send(view.id, "   ")


@pytest.mark.parametrize("end", ["cancel", "end_conversation", "unrecoverable_error"])
def test_send_is_refused_on_a_terminal_instance(relay_api: Any, drive: Any, end: str) -> None:
    view = start(relay_api)
    if end == "cancel":
        relay_api.cancel(view.id)
    elif end == "end_conversation":
        drive(relay_api, view.id, E.AGENT_SENDS_FIRST_MESSAGE, E.END_CONVERSATION)
    else:
        drive(relay_api, view.id, E.UNRECOVERABLE_ERROR)
    with pytest.raises(Refused) as refused:
        relay_api.send(view.id, "hello?")
    assert refused.value.exit_code == 1
    assert relay_api.get(view.id).state in refused.value.message
    assert relay_api.transcript(view.id) == []


def test_send_from_needs_human_intervention_moves_the_conversation_on(
    relay_api: Any, drive: Any, clock: Any
) -> None:
    view = start(relay_api, heartbeat="1h")
    drive(relay_api, view.id, E.AGENT_SENDS_FIRST_MESSAGE, E.REQUEST_INTERVENTION)
    relay_api.send(view.id, "I'll take it from here")
    after = relay_api.get(view.id)
    assert after.state == "WAITING_FOR_REPLY"
    assert after.next_heartbeat_at == clock.now() + timedelta(hours=1)
    assert history(relay_api, view.id)[-2:] == [
        ("NEEDS_HUMAN_INTERVENTION", "ACTIVE", "manual_send"),
        ("ACTIVE", "WAITING_FOR_REPLY", "message_sent"),
    ]


def test_send_while_waiting_restarts_the_silence(relay_api: Any, drive: Any, clock: Any) -> None:
    view = start(relay_api, heartbeat="1h")
    drive(relay_api, view.id, E.AGENT_SENDS_FIRST_MESSAGE, E.MESSAGE_SENT)
    clock.advance(timedelta(minutes=45))
    relay_api.send(view.id, "Just checking")
    assert relay_api.get(view.id).next_heartbeat_at == clock.now() + timedelta(hours=1)


# -- receive --------------------------------------------------------------------------------------


def test_receive_routes_a_reply_to_the_waiting_instance(relay_api: Any, drive: Any) -> None:
    view = start(relay_api)
    drive(relay_api, view.id, E.AGENT_SENDS_FIRST_MESSAGE, E.MESSAGE_SENT)
    message = relay_api.receive("+1 (555) 123-0001", "Tuesday works")
    assert message.instance_id == view.id
    assert (message.direction, message.author, message.status) == ("inbound", "contact", "received")
    after = relay_api.get(view.id)
    assert after.state == "WAITING_FOR_AGENT"
    assert after.next_heartbeat_at is None
    assert history(relay_api, view.id)[-1] == (
        "WAITING_FOR_REPLY",
        "WAITING_FOR_AGENT",
        "contact_replies",
    )
    assert [m.text for m in relay_api.transcript(view.id)] == ["Tuesday works"]


def test_a_reply_to_a_paused_instance_is_kept_and_taken_after_resume(
    relay_api: Any, drive: Any
) -> None:
    view = start(relay_api)
    drive(relay_api, view.id, E.AGENT_SENDS_FIRST_MESSAGE, E.MESSAGE_SENT)
    relay_api.pause(view.id)
    message = relay_api.receive(PHONE, "Sorry, was away")
    assert message.instance_id == view.id
    assert relay_api.get(view.id).state == "PAUSED"
    assert [m.status for m in relay_api.transcript(view.id)] == ["received"]
    assert relay_api.resume(view.id).state == "WAITING_FOR_AGENT"
    assert [row[2] for row in history(relay_api, view.id)[-2:]] == ["resume", "contact_replies"]


def test_a_reply_while_the_agent_is_busy_is_attached_without_a_transition(
    relay_api: Any,
) -> None:
    view = start(relay_api)
    message = relay_api.receive(PHONE, "Hi, who is this?")
    assert message.instance_id == view.id
    assert relay_api.get(view.id).state == "CREATED"
    assert len(relay_api.history(view.id)) == 1


def test_a_message_with_no_live_instance_is_kept_unrouted(relay_api: Any) -> None:
    message = relay_api.receive("+15557654321", "Who are you?")
    assert message.instance_id is None
    assert message.status == "received"
    assert relay_api.status().unrouted_inbound == 1
    assert relay_api.status().late_inbound == 0


def test_a_message_after_the_conversation_ended_is_kept_on_it_and_shown(relay_api: Any) -> None:
    view = start(relay_api)
    relay_api.cancel(view.id)
    late = relay_api.receive(PHONE, "too late")

    assert late.instance_id == view.id
    assert late.status == "received"
    assert "after the conversation ended" in (late.note or "")
    assert relay_api.get(view.id).late_replies == 1
    assert relay_api.status().late_inbound == 1
    assert relay_api.status().unrouted_inbound == 0


def test_receive_refuses_bad_input(relay_api: Any) -> None:
    with pytest.raises(InvalidInput):
        relay_api.receive("nobody", "hi")
    with pytest.raises(InvalidInput):
        relay_api.receive(PHONE, "  ")
    assert count(relay_api, Message) == 0


# -- the FIFO queue -------------------------------------------------------------------------------


def test_when_the_holder_ends_the_oldest_queued_instance_is_promoted(
    relay_api: Any, drive: Any, clock: Any
) -> None:
    a = start(relay_api)
    b = start(relay_api)
    c = start(relay_api)
    clock.advance(10)
    drive(relay_api, a.id, E.AGENT_SENDS_FIRST_MESSAGE, E.END_CONVERSATION)
    assert states(relay_api, a.id, b.id, c.id) == ["COMPLETED", "CREATED", "QUEUED"]
    promoted = relay_api.history(b.id)[-1]
    assert (promoted.from_state, promoted.to_state, promoted.event) == (
        "QUEUED",
        "CREATED",
        "prior_instance_terminal",
    )
    assert promoted.at == clock.now()
    relay_api.cancel(b.id)
    assert states(relay_api, b.id, c.id) == ["FAILED", "CREATED"]


def test_a_paused_queued_instance_keeps_its_place_but_does_not_block(relay_api: Any) -> None:
    a, b, c, d = (start(relay_api) for _ in range(4))
    paused = relay_api.pause(b.id)
    assert (paused.state, paused.previous_state) == ("PAUSED", "QUEUED")
    relay_api.cancel(a.id)
    assert states(relay_api, b.id, c.id, d.id) == ["PAUSED", "CREATED", "QUEUED"]
    assert relay_api.resume(b.id).state == "QUEUED"
    relay_api.cancel(c.id)
    assert states(relay_api, b.id, d.id) == ["CREATED", "QUEUED"]
    relay_api.cancel(b.id)
    assert states(relay_api, d.id) == ["CREATED"]


def test_resuming_a_queued_instance_with_a_free_slot_promotes_it(relay_api: Any) -> None:
    a = start(relay_api)
    b = start(relay_api)
    relay_api.pause(b.id)
    relay_api.cancel(a.id)
    assert relay_api.get(b.id).state == "PAUSED"
    assert relay_api.resume(b.id).state == "CREATED"
    assert [row[2] for row in history(relay_api, b.id)[-3:]] == [
        "pause",
        "resume",
        "prior_instance_terminal",
    ]
    assert start(relay_api).state == "QUEUED"


def test_a_paused_holder_keeps_the_slot(relay_api: Any, drive: Any) -> None:
    a = start(relay_api)
    drive(relay_api, a.id, E.AGENT_SENDS_FIRST_MESSAGE)
    relay_api.pause(a.id)
    b = start(relay_api)
    assert b.state == "QUEUED"
    relay_api.cancel(a.id)
    assert relay_api.get(b.id).state == "CREATED"


def test_queues_are_per_contact(relay_api: Any) -> None:
    a = start(relay_api, PHONE)
    b = start(relay_api, OTHER)
    a2 = start(relay_api, PHONE)
    b2 = start(relay_api, OTHER)
    relay_api.cancel(a.id)
    assert states(relay_api, a2.id, b.id, b2.id) == ["CREATED", "CREATED", "QUEUED"]


# -- heartbeat bookkeeping (done by transitions.apply_event) --------------------------------------


def test_heartbeat_countdown_starts_pauses_and_continues(
    relay_api: Any, drive: Any, clock: Any
) -> None:
    view = start(relay_api, heartbeat="1h")
    drive(relay_api, view.id, E.AGENT_SENDS_FIRST_MESSAGE)
    assert relay_api.get(view.id).next_heartbeat_at is None
    drive(relay_api, view.id, E.MESSAGE_SENT)
    assert relay_api.get(view.id).next_heartbeat_at == clock.now() + timedelta(hours=1)

    clock.advance(timedelta(minutes=20))
    paused = relay_api.pause(view.id)
    assert paused.next_heartbeat_at is None
    assert paused.heartbeat_remaining_seconds == 40 * 60

    clock.advance(timedelta(days=2))
    resumed = relay_api.resume(view.id)
    assert resumed.state == "WAITING_FOR_REPLY"
    assert resumed.next_heartbeat_at == clock.now() + timedelta(minutes=40)
    assert resumed.heartbeat_remaining_seconds is None


def test_heartbeat_is_pending_only_while_waiting_for_a_reply(
    relay_api: Any, drive: Any, clock: Any
) -> None:
    view = start(relay_api, heartbeat="10m")
    drive(relay_api, view.id, E.AGENT_SENDS_FIRST_MESSAGE, E.MESSAGE_SENT)
    clock.advance(timedelta(minutes=10))
    drive(relay_api, view.id, E.HEARTBEAT_FIRES)
    assert relay_api.get(view.id).next_heartbeat_at is None
    clock.advance(5)
    drive(relay_api, view.id, E.FOLLOWUP_SENT)
    # a new silence: the full interval again
    assert relay_api.get(view.id).next_heartbeat_at == clock.now() + timedelta(minutes=10)
    drive(relay_api, view.id, E.CONTACT_REPLIES)
    assert relay_api.get(view.id).next_heartbeat_at is None
    drive(relay_api, view.id, E.AGENT_PROCESSES_REPLY, E.MESSAGE_SENT)
    assert relay_api.get(view.id).next_heartbeat_at == clock.now() + timedelta(minutes=10)
    relay_api.cancel(view.id)
    after = relay_api.get(view.id)
    assert (after.next_heartbeat_at, after.heartbeat_remaining_seconds) == (None, None)


def test_pausing_outside_waiting_for_reply_keeps_no_countdown(relay_api: Any, drive: Any) -> None:
    view = start(relay_api)
    drive(relay_api, view.id, E.AGENT_SENDS_FIRST_MESSAGE)
    paused = relay_api.pause(view.id)
    assert (paused.next_heartbeat_at, paused.heartbeat_remaining_seconds) == (None, None)
    assert relay_api.resume(view.id).next_heartbeat_at is None


def test_a_pause_after_the_heartbeat_was_due_resumes_with_nothing_left(
    relay_api: Any, drive: Any, clock: Any
) -> None:
    view = start(relay_api, heartbeat="10m")
    drive(relay_api, view.id, E.AGENT_SENDS_FIRST_MESSAGE, E.MESSAGE_SENT)
    clock.advance(timedelta(minutes=15))
    assert relay_api.pause(view.id).heartbeat_remaining_seconds == 0
    assert relay_api.resume(view.id).next_heartbeat_at == clock.now()


# -- status ---------------------------------------------------------------------------------------


def test_status_counts(relay_api: Any, drive: Any) -> None:
    empty = relay_api.status()
    assert set(empty.states) == {s.value for s in State}
    assert sum(empty.states.values()) == 0
    assert (empty.queue_depth, empty.outbox_pending, empty.unrouted_inbound) == (0, 0, 0)
    assert empty.last_daemon_seen is None and empty.daemons == ()

    a = start(relay_api)
    start(relay_api)
    start(relay_api)
    b = start(relay_api, OTHER)
    drive(relay_api, b.id, E.AGENT_SENDS_FIRST_MESSAGE, E.MESSAGE_SENT)
    relay_api.send(b.id, "ping")
    relay_api.receive("+15550000000", "hello?")
    relay_api.pause(a.id)
    view = relay_api.status()
    assert view.states["PAUSED"] == 1
    assert view.states["QUEUED"] == 2
    assert view.states["WAITING_FOR_REPLY"] == 1
    assert sum(view.states.values()) == 4
    assert view.queue_depth == 2
    assert view.outbox_pending == 1
    assert view.unrouted_inbound == 1
    data = view.to_json()
    assert data["states"]["QUEUED"] == 2
    assert data["last_daemon_seen"] is None


# -- records --------------------------------------------------------------------------------------


def test_transcript_is_in_order(relay_api: Any, drive: Any, clock: Any) -> None:
    view = start(relay_api)
    drive(relay_api, view.id, E.AGENT_SENDS_FIRST_MESSAGE, E.MESSAGE_SENT)
    relay_api.send(view.id, "first")
    clock.advance(1)
    relay_api.receive(PHONE, "second")
    clock.advance(1)
    relay_api.send(view.id, "third")
    rows = relay_api.transcript(view.id)
    assert [(m.author, m.direction, m.text) for m in rows] == [
        ("operator", "outbound", "first"),
        ("contact", "inbound", "second"),
        ("operator", "outbound", "third"),
    ]
    assert rows[0].to_json()["created_at"].endswith("Z")


def test_every_state_change_is_logged_with_actor_and_time(
    relay_api: Any, drive: Any, clock: Any
) -> None:
    view = start(relay_api)
    clock.advance(1)
    drive(relay_api, view.id, E.AGENT_SENDS_FIRST_MESSAGE, actor="agent")
    clock.advance(1)
    relay_api.pause(view.id, reason="lunch")
    rows = relay_api.history(view.id)
    assert [(r.event, r.actor, r.reason) for r in rows] == [
        ("start", "operator", None),
        ("agent_sends_first_message", "agent", None),
        ("pause", "operator", "lunch"),
    ]
    assert [r.at for r in rows] == [
        clock.now() - timedelta(seconds=2),
        clock.now() - timedelta(seconds=1),
        clock.now(),
    ]
    assert rows[-1].to_json()["at"].endswith("Z")


def test_a_refused_event_changes_nothing(relay_api: Any, drive: Any) -> None:
    view = start(relay_api)
    with pytest.raises(Refused):
        drive(relay_api, view.id, E.AGENT_SENDS_FIRST_MESSAGE, E.CONTACT_REPLIES)
    # the whole transaction rolled back, including the allowed first event
    assert relay_api.get(view.id).state == "CREATED"
    assert len(relay_api.history(view.id)) == 1


def test_times_are_timezone_aware_utc(relay_api: Any) -> None:
    view = relay_api.get(start(relay_api).id)
    assert view.created_at.utcoffset() == timedelta(0)
    assert view.to_json()["created_at"] == "2026-01-05T12:00:00Z"


def test_relay_open_uses_the_configured_database(db_url: str) -> None:
    from engine_relay import EngineRelay as Relay

    from relay.config import load_config

    relay = Relay.open(load_config(overrides={"database.url": db_url}))
    try:
        assert start(relay).state == "CREATED"
    finally:
        relay.store.dispose()
