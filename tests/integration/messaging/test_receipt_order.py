"""Receipts never move a message's delivery status backwards (issue 32): out of
order and repeated status callbacks, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from relay.channels.base import Incoming, Receipt
from relay.core.receipts import moves
from relay.core.values import DeliveryStatus as S
from relay.runner.pulse import Pulse
from relay.store.models import Message
from relay.testing import PHONE, RecordingChannel

SETTINGS = {"channels.test.type": "test", "defaults.channel": "test"}


@pytest.fixture
def sent(make_relay: Any, db_url: str, clock: Any, relay_channel: RecordingChannel) -> Any:
    relay = make_relay(db_url, clock, **SETTINGS)
    relay.start(PHONE, "the delivery", ["Which day?"])
    Pulse(relay, "d1").run()
    with relay.store.transaction() as session:
        message = session.query(Message).filter_by(direction="outbound").one()
        return relay, message.id, message.provider_message_id


def feed(relay: Any, provider_id: str, *statuses: S, at: Any = None) -> None:
    for status in statuses:
        relay.ingest("test", Incoming(receipts=[Receipt(provider_id, status, at=at)]))


def row(relay: Any, message_id: int) -> tuple[str, str]:
    with relay.store.transaction() as session:
        message = session.get(Message, message_id)
        return message.delivery_status, message.status


def test_delivered_then_sent_stays_delivered_and_read_moves_on(sent: Any) -> None:
    relay, message_id, pid = sent
    feed(relay, pid, S.DELIVERED, S.SENT)
    assert row(relay, message_id) == ("delivered", "sent")
    feed(relay, pid, S.READ, S.DELIVERED, S.SENT)
    assert row(relay, message_id) == ("read", "sent")


def test_failed_failed_delivered_stays_failed(sent: Any) -> None:
    relay, message_id, pid = sent
    feed(relay, pid, S.FAILED, S.FAILED, S.DELIVERED)
    assert row(relay, message_id) == ("failed", "failed")


def test_a_failure_is_undone_only_by_a_success_the_provider_dates_later(
    sent: Any, clock: Any
) -> None:
    relay, message_id, pid = sent
    feed(relay, pid, S.UNDELIVERED, at=clock.now())
    feed(relay, pid, S.DELIVERED, at=clock.now() - timedelta(minutes=1))
    assert row(relay, message_id) == ("undelivered", "failed")
    feed(relay, pid, S.DELIVERED, at=clock.now() + timedelta(minutes=1))
    assert row(relay, message_id) == ("delivered", "sent")


def test_the_order_itself() -> None:
    assert moves(None, S.SENT, stated_later=False)
    assert not moves(S.DELIVERED, S.SENT, stated_later=True)
    assert not moves(S.READ, S.DELIVERED, stated_later=True)
    assert moves(S.SENT, S.FAILED, stated_later=False)
    assert not moves(S.FAILED, S.DELIVERED, stated_later=False)
    assert moves(S.BOUNCED, S.DELIVERED, stated_later=True)
    assert not moves(S.FAILED, S.UNDELIVERED, stated_later=True)
