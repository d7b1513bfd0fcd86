"""The harness's checks catch what they are for (a harness that never fails proves nothing)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from chaoslib import Ack, ChaosLog, _after_acknowledged, _duplicates, _lost, _out_of_order
from engine_relay import EngineRelay as Relay

from relay.core.clock import isoformat

PHONE = "+15551230001"


def _delivery(message_id: int, key: str, at: datetime, instance_id: str = "i1") -> dict[str, Any]:
    return {
        "message_id": message_id,
        "instance_id": instance_id,
        "idempotency_key": key,
        "sent_at": isoformat(at),
    }


def test_a_key_or_a_message_delivered_twice_is_counted() -> None:
    now = datetime.now(UTC)
    problems: list[str] = []
    twice = [_delivery(1, "a", now), _delivery(2, "b", now), _delivery(1, "a", now)]
    assert _duplicates(twice, problems) == 2  # the key, and the message id
    assert problems


def test_a_message_delivered_before_an_earlier_one_is_counted() -> None:
    now = datetime.now(UTC)
    problems: list[str] = []
    assert _out_of_order([_delivery(2, "b", now), _delivery(1, "a", now)], problems) == 1


def test_deliveries_after_an_acknowledged_cancel_beyond_in_flight_are_counted(
    make_relay: Callable[..., Relay], db_url: str, tmp_path: Path
) -> None:
    relay = make_relay(db_url, **{"channels.console.file": str(tmp_path / "c.jsonl")})
    view = relay.start(PHONE, "Confirm the date", ["Which day?"])
    cancelled = relay.cancel(view.id).to_json()
    at = datetime.fromisoformat(cancelled["updated_at"].replace("Z", "+00:00"))
    before = _delivery(1, "a", at - timedelta(seconds=1), view.id)
    after = [_delivery(n, f"k{n}", at + timedelta(seconds=n), view.id) for n in (2, 3)]
    acks = [Ack("cancel", view.id, 0, {**cancelled, "in_flight": 1}, at)]
    problems: list[str] = []
    with relay.store.transaction() as session:
        assert _after_acknowledged(session, [before, *after], acks, problems) == (1, 0)
        assert _after_acknowledged(session, [before], acks, []) == (0, 0)


def test_an_inbox_line_never_stored_is_lost(make_relay: Callable[..., Relay], db_url: str) -> None:
    relay = make_relay(db_url)
    relay.receive(PHONE, "stored", channel="console", provider_message_id="line-1")
    log = ChaosLog(inbox=[{"id": "line-1"}, {"id": "line-2"}])
    problems: list[str] = []
    with relay.store.transaction() as session:
        assert _lost(session, log.inbox, problems) == 1
    assert "line-2" in problems[0]


def test_sms_creates_are_matched_by_sid_and_a_second_create_is_a_duplicate(
    make_relay: Callable[..., Relay], db_url: str
) -> None:
    """Two conversations of one contact can send the same text: each create is the
    row that recorded its sid; one that no row recorded is a second delivery."""
    from chaoslib import _extra, sms_deliveries
    from messaging_fakes import TwilioMessage
    from sqlalchemy import update

    from relay.store.models import Message

    relay = make_relay(db_url)
    first = relay.start(PHONE, "x", ["y"], defer=False)
    relay.cancel(first.id)
    second = relay.start(PHONE, "x", ["y"], defer=False)
    now = datetime.now(UTC)
    with relay.store.transaction() as session:
        for view, sid in ((first, "SM1"), (second, "SM2")):
            session.execute(
                update(Message)
                .where(Message.instance_id == view.id, Message.direction == "outbound")
                .values(channel="sms", body="same text", provider_message_id=sid, status="sent")
            )
    form = {"To": PHONE, "Body": "same text"}
    creates = [
        TwilioMessage("SM2", form, now),
        TwilioMessage("SM1", form, now + timedelta(seconds=1)),
        TwilioMessage("SM3", form, now + timedelta(seconds=2)),  # sent again: a duplicate
    ]
    with relay.store.read_transaction() as session:
        records = sms_deliveries(session, creates)
    assert [r["instance_id"] for r in records[:2]] == [second.id, first.id]
    assert _extra(records) == 1
