"""The funnel's facts on the instance row (issue 11): kept by the transitions,
the outbox and inbound as conversations run, equal to what the transcript and
the transition log say, rebuilt the same by migration 0007's backfill; and the
figures of ``relay stats`` computed from them, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from relay.core.states import Event
from relay.runner.pulse import Pulse
from relay.store import migrate
from relay.store.models import EventRow, Instance, Message
from relay.testing import FakeClock

FACTS = ("outcome", "first_delivered_at", "first_reply_at", "reply_seconds", "followups_sent")


def _settle(relay: Any) -> None:
    pulse = Pulse(relay, owner="test")
    while not pulse.run().idle:
        pass


def _story(relay: Any, clock: FakeClock, drive: Callable[..., str]) -> dict[str, str]:
    """Campaign x: one conversation per outcome; campaign y: one quick reply."""
    ids = {}
    for name, campaign, heartbeat in (
        ("completed", "x", "1d"), ("needs_human", "x", "1d"), ("abandoned", "x", "1h"),
        ("opted_out", "x", "1d"), ("ended_early", "x", "1d"), ("failed", "x", "1d"),
        ("live", "x", "1d"), ("other", "y", "1d"),
    ):  # fmt: skip
        contact = f"+1555000{len(ids):04d}"
        view = relay.start(contact, "Confirm the date", ["Which day suits you?"],
                           heartbeat=heartbeat, max_followups=1, campaign=campaign)  # fmt: skip
        ids[name] = view.id
        ids[name + ":contact"] = contact
    _settle(relay)  # every first message delivered at t0
    t0 = clock.now()
    replies = ((10, "other", "Thursday"), (30, "needs_human", "A human please"),
               (90, "completed", "Thursday"), (150, "opted_out", "STOP"))  # fmt: skip
    for after, name, text in replies:
        clock.set(t0 + timedelta(seconds=after))
        relay.receive(ids[name + ":contact"], text)
        _settle(relay)
    drive(relay, ids["ended_early"], Event.END_CONVERSATION)
    drive(relay, ids["failed"], Event.CANCEL)
    for _ in range(2):  # a follow-up, then the heartbeat after it abandons
        clock.advance(timedelta(hours=1, minutes=1))
        _settle(relay)
    return ids


def _facts(relay: Any) -> dict[str, tuple[Any, ...]]:
    columns = [getattr(Instance, f) for f in FACTS]
    with relay.store.read_transaction() as session:
        return {row[0]: tuple(row[1:]) for row in session.execute(select(Instance.id, *columns))}


def _derived(relay: Any) -> dict[str, tuple[Any, Any, int]]:
    """first delivery, first reply and follow-ups as the transcript and log tell them."""

    def first(column: Any, *where: Any) -> dict[str, Any]:
        query = select(Message.instance_id, func.min(column)).where(*where)
        return dict(session.execute(query.group_by(Message.instance_id)).all())

    with relay.store.read_transaction() as session:
        sent = first(Message.sent_at, Message.direction == "outbound", Message.status == "sent")
        replied = first(Message.created_at, Message.direction == "inbound",
                        Message.kind == "message")  # fmt: skip
        followups = dict(session.execute(
            select(EventRow.instance_id, func.count())
            .where(EventRow.event == "followup_sent").group_by(EventRow.instance_id)
        ).all())  # fmt: skip
        ids = session.scalars(select(Instance.id)).all()
    return {i: (sent.get(i), replied.get(i), followups.get(i, 0)) for i in ids}


def test_the_facts_follow_the_conversations_and_the_funnel_counts_them(
    make_relay: Callable[..., Any], db_url: str, clock: FakeClock, drive: Callable[..., str]
) -> None:
    relay = make_relay(db_url, clock)
    ids = _story(relay, clock, drive)
    facts = _facts(relay)
    for name in ("completed", "needs_human", "abandoned", "opted_out", "ended_early", "failed"):
        assert facts[ids[name]][0] == name, name
    assert facts[ids["live"]][0] is None
    for instance_id, (delivered, replied, followups) in _derived(relay).items():
        assert facts[instance_id][1:3] == (delivered, replied)
        assert facts[instance_id][4] == followups
    assert facts[ids["abandoned"]][4] == 1
    assert [facts[ids[n]][3] for n in ("other", "needs_human", "completed", "opted_out")] == [
        10.0, 30.0, 90.0, 150.0]  # fmt: skip

    view = relay.stats(campaign="x")
    assert (view.started, view.delivered, view.replied, view.followups) == (7, 7, 3, 1)
    assert view.outcomes == {"completed": 1, "ended_early": 1, "opted_out": 1, "abandoned": 1,
                             "failed": 1, "needs_human": 1, "live": 1}  # fmt: skip
    assert view.median_first_reply_seconds == pytest.approx(90.0)
    everything = relay.stats()
    assert (everything.started, everything.replied) == (8, 4)
    assert everything.median_first_reply_seconds == pytest.approx(60.0)  # (30 + 90) / 2
    assert relay.stats(since=timedelta(minutes=1)).started == 0


def test_a_bounce_takes_the_first_delivery_back(
    make_relay: Callable[..., Any], db_url: str, clock: FakeClock
) -> None:
    from relay.channels.base import Receipt
    from relay.core.values import DeliveryStatus
    from relay.engine.inbound import ingest as inbound
    relay = make_relay(db_url, clock)
    view = relay.start("+15550001111", "Confirm the date", ["Which day?"], campaign="b")
    _settle(relay)
    assert relay.stats(campaign="b").delivered == 1
    with relay.store.transaction() as session:
        message = session.scalars(select(Message).where(Message.instance_id == view.id)).one()
        receipt = Receipt(message.provider_message_id or "", DeliveryStatus.BOUNCED,
                          error="no such mailbox", permanent=True)  # fmt: skip
        assert inbound.apply_receipt(session, message.channel or "", receipt, clock.now())
    stats = relay.stats(campaign="b")
    assert (stats.delivered, stats.outcomes["needs_human"]) == (0, 1)
    assert stats.failed_deliveries == (("no such mailbox", 1),)


def test_migration_0007_backfills_the_same_facts(
    make_relay: Callable[..., Any], empty_db_url: str, clock: FakeClock, drive: Callable[..., str]
) -> None:
    migrate.upgrade_url(empty_db_url)
    relay = make_relay(empty_db_url, clock)
    _story(relay, clock, drive)
    kept, view = _facts(relay), relay.stats(campaign="x")
    migrate.downgrade(relay.store, "0006")
    migrate.upgrade(relay.store)
    rebuilt = _facts(relay)
    assert rebuilt.keys() == kept.keys()
    for instance_id, facts in kept.items():
        assert rebuilt[instance_id][:3] == facts[:3]
        assert rebuilt[instance_id][4] == facts[4]
        assert rebuilt[instance_id][3] == pytest.approx(facts[3], abs=0.01)
    again = relay.stats(campaign="x")
    assert again.median_first_reply_seconds == pytest.approx(view.median_first_reply_seconds)
    assert again.to_json() | {"median_first_reply_seconds": 0} == view.to_json() | {
        "median_first_reply_seconds": 0}  # fmt: skip
