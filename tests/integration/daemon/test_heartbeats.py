"""Heartbeat flows with the settable clock, on SQLite and PostgreSQL (issue 4).

Each test moves a FakeClock and runs one pulse at a time (what ``relay tick``
and every daemon pulse run), then reads the store: states, the transition log
and the messages the console channel delivered. Nothing sleeps.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from backends import POSTGRES_ONLY
from daemon_support import (
    OTHER,
    PHONE,
    events,
    history,
    outbound,
    pulse,
    row,
    sent_texts,
    start_waiting,
)
from engine_relay import EngineRelay as Relay
from sqlalchemy import select

from relay.core.turns import Action, TurnContext, TurnReason
from relay.engine.conversation import heartbeat
from relay.store.models import EventRow, Instance

HOUR = timedelta(hours=1)
SECOND = timedelta(seconds=1)


# -- follow-ups, then abandonment ----------------------------------------------------------------


def test_n_follow_ups_then_abandoned(relay: Relay, clock: Any) -> None:
    iid = start_waiting(relay, max_followups=3)
    assert row(relay, iid).next_heartbeat_at == clock.now() + HOUR

    for number in (1, 2, 3):
        clock.advance(HOUR - SECOND)
        assert pulse(relay).fired == 0  # one second early: nothing
        clock.advance(SECOND)
        report = pulse(relay)
        assert (report.fired, report.delivery.sent) == (1, 1)
        instance = row(relay, iid)
        assert instance.state == "WAITING_FOR_REPLY"
        assert instance.follow_up_count == number
        # The next countdown starts when the follow-up is sent.
        assert instance.next_heartbeat_at == clock.now() + HOUR
        # The agent was told which follow-up this is.
        assert f"reminder {number} of 3" in sent_texts(relay, iid)[-1]

    clock.advance(HOUR)
    report = pulse(relay)
    assert (report.fired, report.abandoned, report.delivery.sent) == (0, 1, 0)
    instance = row(relay, iid)
    assert instance.state == "ABANDONED"
    assert instance.next_heartbeat_at is None and instance.ended_at == clock.now()

    texts = sent_texts(relay, iid)
    assert len(texts) == 1 + 3  # the first message and exactly max_followups follow-ups
    assert [("reminder" in t) for t in texts] == [False, True, True, True]
    assert events(relay, iid, "heartbeat_fires") == 4
    assert events(relay, iid, "followup_sent") == 3
    assert history(relay, iid)[-1] == (
        "max_followups_exceeded",
        "HEARTBEAT_SCHEDULED",
        "ABANDONED",
        "heartbeat",
    )
    # Nothing more happens to an abandoned instance.
    clock.advance(24 * HOUR)
    assert pulse(relay).idle


def test_zero_follow_ups_abandons_at_the_first_heartbeat(relay: Relay, clock: Any) -> None:
    iid = start_waiting(relay, max_followups=0)
    clock.advance(HOUR)
    assert pulse(relay).abandoned == 1
    assert row(relay, iid).state == "ABANDONED"
    assert len(sent_texts(relay, iid)) == 1


def test_a_reply_resets_the_follow_up_count(relay: Relay, clock: Any) -> None:
    iid = start_waiting(relay, max_followups=2)
    for _ in range(2):
        clock.advance(HOUR)
        pulse(relay)
    assert row(relay, iid).follow_up_count == 2  # one more heartbeat would abandon

    clock.advance(10 * timedelta(minutes=1))
    relay.receive(PHONE, "Tuesday works")
    assert row(relay, iid).follow_up_count == 0
    pulse(relay)  # the reply turn: answers and asks the next question
    instance = row(relay, iid)
    assert instance.state == "WAITING_FOR_REPLY"
    assert instance.follow_up_count == 0
    assert instance.next_heartbeat_at == clock.now() + HOUR
    assert sent_texts(relay, iid)[-1] == "Morning or afternoon?"

    # A full new allowance of follow-ups, counted from one again.
    for number in (1, 2):
        clock.advance(HOUR)
        pulse(relay)
        assert f"reminder {number} of 2" in sent_texts(relay, iid)[-1]
    clock.advance(HOUR)
    assert pulse(relay).abandoned == 1
    assert events(relay, iid, "followup_sent") == 4


# -- the agent's own delay ------------------------------------------------------------------------


class DelayAgent:
    """Sends one message per turn and asks for the next heartbeat after ``delays[reason]``."""

    name = "delays"

    def __init__(self, delays: dict[TurnReason, str]) -> None:
        self.delays = delays
        self.contexts: list[TurnContext] = []

    def run(self, context: TurnContext) -> list[Action]:
        self.contexts.append(context)
        actions = [Action.send_message(f"{context.reason} #{len(self.contexts)}")]
        delay = self.delays.get(TurnReason(context.reason))
        if delay:
            actions.append(Action.schedule_next_heartbeat(delay))
        return actions


def test_an_agent_delay_applies_to_the_very_next_countdown(
    relay: Relay, clock: Any, register_agent: Callable[[str, Any], None]
) -> None:
    agent = DelayAgent({TurnReason.FIRST_MESSAGE: "10m", TurnReason.FOLLOW_UP: "3h"})
    register_agent("delays", agent)
    iid = start_waiting(relay, agent="delays", max_followups=5)
    # The delay asked for in the first turn is this countdown's, not the next one's.
    assert row(relay, iid).next_heartbeat_at == clock.now() + timedelta(minutes=10)
    assert row(relay, iid).heartbeat_override_seconds is None

    clock.advance(timedelta(minutes=10))
    assert pulse(relay).fired == 1
    assert agent.contexts[-1].reason == TurnReason.FOLLOW_UP
    assert row(relay, iid).next_heartbeat_at == clock.now() + timedelta(hours=3)

    # An override lasts one countdown: a turn that asks for nothing gets the interval.
    agent.delays.clear()
    clock.advance(timedelta(hours=3))
    assert pulse(relay).fired == 1
    assert row(relay, iid).next_heartbeat_at == clock.now() + HOUR


def test_an_agent_delay_in_a_reply_turn(
    relay: Relay, clock: Any, register_agent: Callable[[str, Any], None]
) -> None:
    register_agent("delays", DelayAgent({TurnReason.REPLY: "2d"}))
    iid = start_waiting(relay, agent="delays")
    assert row(relay, iid).next_heartbeat_at == clock.now() + HOUR
    relay.receive(PHONE, "Let me check and get back to you")
    pulse(relay)
    assert row(relay, iid).next_heartbeat_at == clock.now() + timedelta(days=2)


# -- pause, resume, snooze ----------------------------------------------------------------------


def test_pause_keeps_the_remaining_time_and_resume_continues_it(relay: Relay, clock: Any) -> None:
    iid = start_waiting(relay)
    clock.advance(timedelta(minutes=20))
    view = relay.pause(iid, reason="the customer is on holiday")
    assert view.next_heartbeat_at is None
    assert view.heartbeat_remaining_seconds == 40 * 60

    clock.advance(5 * HOUR)
    assert pulse(relay).idle  # a paused heartbeat never fires
    view = relay.resume(iid)
    assert view.state == "WAITING_FOR_REPLY"
    assert view.next_heartbeat_at == clock.now() + timedelta(minutes=40)  # not a fresh hour
    assert view.heartbeat_remaining_seconds is None

    clock.advance(timedelta(minutes=40) - SECOND)
    assert pulse(relay).fired == 0
    clock.advance(SECOND)
    assert pulse(relay).fired == 1


def test_a_pause_after_the_heartbeat_fell_due_resumes_it_at_once(relay: Relay, clock: Any) -> None:
    iid = start_waiting(relay)
    clock.advance(2 * HOUR)  # overdue: no pulse ran (the daemon was down)
    assert relay.pause(iid).heartbeat_remaining_seconds == 0
    clock.advance(HOUR)
    relay.resume(iid)
    assert row(relay, iid).next_heartbeat_at == clock.now()
    assert pulse(relay).fired == 1


def test_a_snooze_resumes_by_itself(relay: Relay, clock: Any) -> None:
    iid = start_waiting(relay)
    clock.advance(timedelta(minutes=15))
    view = relay.pause(iid, until=clock.now() + 2 * HOUR)
    assert view.paused_until == clock.now() + 2 * HOUR

    clock.advance(2 * HOUR - SECOND)
    assert pulse(relay).resumed == 0
    assert row(relay, iid).state == "PAUSED"
    clock.advance(SECOND)
    report = pulse(relay)
    assert report.resumed == 1 and report.fired == 0
    instance = row(relay, iid)
    assert instance.state == "WAITING_FOR_REPLY"
    assert instance.paused_until is None and instance.previous_state is None
    # The countdown continues with the 45 minutes that were left.
    assert instance.next_heartbeat_at == clock.now() + timedelta(minutes=45)
    assert history(relay, iid)[-1] == ("resume", "PAUSED", "WAITING_FOR_REPLY", "snooze")


def test_a_snooze_ended_by_hand_does_not_resume_again(relay: Relay, clock: Any) -> None:
    iid = start_waiting(relay)
    relay.pause(iid, until=clock.now() + HOUR)
    relay.resume(iid)
    relay.pause(iid)  # an open-ended pause this time
    clock.advance(2 * HOUR)
    assert pulse(relay).resumed == 0
    assert row(relay, iid).state == "PAUSED"


def test_a_snooze_until_the_past_is_refused(relay: Relay, clock: Any) -> None:
    from relay.core.errors import InvalidInput

    iid = start_waiting(relay)
    with pytest.raises(InvalidInput, match="in the future"):
        relay.pause(iid, until=clock.now())
    assert row(relay, iid).state == "WAITING_FOR_REPLY"


# -- a daemon that was down ---------------------------------------------------------------------


def test_down_for_a_day_each_overdue_heartbeat_fires_once_in_due_order(
    relay: Relay, clock: Any
) -> None:
    # Created in one order, due in another: 30 min, 2 h, 1 h after their first messages.
    intervals = {PHONE: "2h", OTHER: "30m", "+15551230003": "1h"}
    ids = {}
    for contact, interval in intervals.items():
        ids[contact] = start_waiting(relay, contact, heartbeat=interval, max_followups=5)
        clock.advance(timedelta(minutes=1))
    due = {iid: row(relay, iid).next_heartbeat_at for iid in ids.values()}

    clock.advance(timedelta(days=1))  # 24 missed intervals and more
    report = pulse(relay)
    assert report.fired == 3 and report.delivery.sent == 3
    for iid in ids.values():
        instance = row(relay, iid)
        assert (instance.follow_up_count, events(relay, iid, "heartbeat_fires")) == (1, 1)
        interval = timedelta(seconds=instance.heartbeat_seconds)
        assert instance.next_heartbeat_at == clock.now() + interval  # not catching up

    with relay.store.transaction() as session:
        fired = session.scalars(
            select(EventRow.instance_id)
            .where(EventRow.event == "heartbeat_fires")
            .order_by(EventRow.id)
        ).all()
    assert list(fired) == sorted(due, key=lambda iid: due[iid])
    assert pulse(relay).idle  # and nothing more at the same moment


def test_more_overdue_heartbeats_than_one_batch(make_relay_here: Callable[..., Relay], clock: Any):
    relay = make_relay_here(**{"daemon.batch": 2})
    ids = [start_waiting(relay, f"+155512300{n:02d}") for n in range(5)]
    clock.advance(HOUR)
    fired = 0
    for _ in range(5):
        fired += pulse(relay).fired
    assert fired == 5
    assert all(events(relay, iid, "heartbeat_fires") == 1 for iid in ids)


# -- the firing re-checks the row -----------------------------------------------------------------


def _reply(relay: Relay, iid: str) -> None:
    relay.receive(PHONE, "Thursday")


def _pause(relay: Relay, iid: str) -> None:
    relay.pause(iid)


def _cancel(relay: Relay, iid: str) -> None:
    relay.cancel(iid)


def _opt_out(relay: Relay, iid: str) -> None:
    relay.receive(PHONE, "STOP")


@pytest.mark.parametrize("change", [_reply, _pause, _cancel, _opt_out])
def test_a_heartbeat_overtaken_by_events_does_nothing(
    relay: Relay, clock: Any, change: Callable[[Relay, str], None]
) -> None:
    iid = start_waiting(relay)
    clock.advance(2 * HOUR)  # due, not yet fired
    change(relay, iid)
    pulse(relay)
    assert events(relay, iid, "heartbeat_fires") == 0
    assert not any("reminder" in m.body for m in outbound(relay, iid))


def test_a_reply_that_came_during_a_pause_is_answered_on_resume_not_followed_up(
    relay: Relay, clock: Any
) -> None:
    iid = start_waiting(relay)
    relay.pause(iid)
    relay.receive(PHONE, "Friday morning")  # stored at once, answered later
    clock.advance(3 * HOUR)
    assert pulse(relay).idle
    view = relay.resume(iid)
    assert view.state == "WAITING_FOR_AGENT"  # the waiting reply was taken up
    assert view.next_heartbeat_at is None and view.follow_up_count == 0
    pulse(relay)
    assert events(relay, iid, "heartbeat_fires") == 0
    assert sent_texts(relay, iid)[-1] == "Morning or afternoon?"


@POSTGRES_ONLY
def test_a_heartbeat_locked_by_a_command_in_progress_is_skipped_not_fired(
    make_relay_here: Callable[..., Relay], clock: Any
) -> None:
    """On PostgreSQL the firing takes due rows with SKIP LOCKED: a row an operator's
    command holds is left alone, and seen in its new state once the command commits."""
    relay = make_relay_here()
    iid = start_waiting(relay)
    clock.advance(2 * HOUR)
    locked, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def pause_slowly() -> None:
        from relay.core.states import Event
        from relay.engine.conversation import transitions
        from relay.store import instances

        try:
            with relay.store.transaction() as session:
                instance = instances.resolve(session, iid, lock=True)
                transitions.apply_event(session, instance, Event.PAUSE, now=clock.now())
                locked.set()
                assert release.wait(10)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
            locked.set()

    other = make_relay_here()
    worker = threading.Thread(target=pause_slowly)
    worker.start()
    assert locked.wait(10)
    try:
        assert heartbeat.fire_due(other, 10).fired == 0  # skipped, and did not wait
    finally:
        release.set()
        worker.join(10)
    assert not errors
    assert heartbeat.fire_due(other, 10).fired == 0
    assert row(relay, iid).state == "PAUSED"
    assert row(relay, iid).heartbeat_remaining_seconds == 0


def test_the_instance_row_reflects_only_committed_firings(relay: Relay, clock: Any) -> None:
    iid = start_waiting(relay)
    clock.advance(HOUR)
    assert heartbeat.fire_due(relay, 10).fired == 1
    with relay.store.transaction() as session:
        instance = session.scalar(select(Instance).where(Instance.id == iid))
        assert instance is not None
        assert instance.state == "HEARTBEAT_SCHEDULED" and instance.next_heartbeat_at is None
    # A second firing finds nothing: the heartbeat is no longer pending.
    assert heartbeat.fire_due(relay, 10).fired == 0
