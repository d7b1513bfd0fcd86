"""What a bounce does to its contact, on SQLite and PostgreSQL: a dead address is marked
at once with the bounce that said so; other bounces fail the message and mark only when
they repeat ([bounces]); complaints opt out with the reason ``complaint``; and
``relay contact deliverable`` clears a mark, audited with the old reason."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from sqlalchemy import select

from relay.channels.base import Inbound, Incoming, Receipt
from relay.core.values import DeliveryStatus, InboundKind
from relay.engine.contacts.bounce_marks import SoftBounces
from relay.engine.inbound import ingest as inbound
from relay.runner.pulse import Pulse
from relay.store.models import Contact, EventRow, Message
from relay.testing import FakeClock

PHONE = "+15550002222"
DEFAULT = SoftBounces()


def _settle(relay: Any) -> None:
    pulse = Pulse(relay, owner="test")
    while not pulse.run().idle:
        pass


def _sent(relay: Any, instance_id: str) -> list[Message]:
    with relay.store.read_transaction() as session:
        query = select(Message).where(
            Message.instance_id == instance_id, Message.direction == "outbound"
        )
        return list(session.scalars(query.order_by(Message.id)))


def _bounce(relay: Any, message: Message, now: Any, *, reason: str, permanent: bool,
            policy: SoftBounces = DEFAULT) -> None:  # fmt: skip
    receipt = Receipt(message.provider_message_id or "", DeliveryStatus.BOUNCED,
                      error=f"bounced ({reason})", permanent=permanent, reason=reason)  # fmt: skip
    with relay.store.transaction() as session:
        assert inbound.apply_receipt(session, message.channel or "", receipt, now, bounces=policy)


def test_a_dead_address_is_marked_with_its_bounce_and_can_be_cleared(
    make_relay: Callable[..., Any], db_url: str, clock: FakeClock
) -> None:
    relay = make_relay(db_url, clock)
    view = relay.start(PHONE, "Confirm the date", ["Which day?"])
    _settle(relay)
    [message] = _sent(relay, view.id)
    _bounce(relay, message, clock.now(), reason="user_unknown", permanent=True)
    shown = relay.contact(PHONE).to_json()
    assert shown["undeliverable"] is True
    assert shown["bounce"]["reason"] == "user_unknown"
    assert shown["bounce"]["message_id"] == message.id
    assert shown["bounce"]["instance_id"] == view.id
    with relay.store.read_transaction() as session:
        row = session.get(Message, message.id)
        assert row is not None and row.bounce_reason == "user_unknown" and row.status == "failed"
    cleared = relay.deliverable(PHONE).to_json()
    assert cleared["undeliverable"] is False and cleared["bounce"] is None
    [audit] = _audits(relay)
    assert "bounced (user_unknown)" in audit["args"]["old_reason"]
    assert audit["args"]["bounce_reason"] == "user_unknown"
    relay.deliverable(PHONE)  # nothing to clear: no second audit row
    assert len(_audits(relay)) == 1


def _audits(relay: Any) -> list[dict[str, Any]]:
    with relay.store.read_transaction() as session:
        rows = session.scalars(select(EventRow).where(EventRow.kind == "command")).all()
        return [r.data for r in rows if r.data["command"] == "contact deliverable"]


def test_soft_bounces_fail_the_message_and_mark_only_when_they_repeat(
    make_relay: Callable[..., Any], db_url: str, clock: FakeClock
) -> None:
    relay = make_relay(db_url, clock)
    view = relay.start(PHONE, "Confirm the date", ["Which day?"])
    _settle(relay)
    relay.send(view.id, "Are you there?")
    _settle(relay)
    relay.send(view.id, "Still there?")
    _settle(relay)
    first, second, third = _sent(relay, view.id)
    policy = SoftBounces(limit=2, window=timedelta(days=30))
    _bounce(relay, first, clock.now(), reason="mailbox_full", permanent=False, policy=policy)
    assert relay.contact(PHONE).to_json()["undeliverable"] is False
    assert relay.get(view.id).state == "NEEDS_HUMAN_INTERVENTION"
    clock.advance(timedelta(days=31))  # outside the window: the first one no longer counts
    _bounce(relay, second, clock.now(), reason="spam", permanent=False, policy=policy)
    assert relay.contact(PHONE).to_json()["undeliverable"] is False
    # a second report of the same bounce is kept out (a failure is final): no count
    _bounce(relay, second, clock.now(), reason="spam", permanent=False, policy=policy)
    assert relay.contact(PHONE).to_json()["undeliverable"] is False
    _bounce(relay, third, clock.now(), reason="mailbox_full", permanent=False, policy=policy)
    shown = relay.contact(PHONE).to_json()
    assert shown["undeliverable"] is True
    assert shown["undeliverable_reason"].startswith("2 bounces within 30 days")
    assert shown["bounce"]["reason"] == "mailbox_full"


def test_complaints_opt_out_with_the_reason_complaint(
    make_relay: Callable[..., Any], db_url: str, clock: FakeClock
) -> None:
    relay = make_relay(db_url, clock)
    view = relay.start(PHONE, "Confirm the date", ["Which day?"])
    _settle(relay)
    [message] = _sent(relay, view.id)
    receipt = Receipt(message.provider_message_id or "", DeliveryStatus.DELIVERED,
                      opted_out=True, reason="complaint")  # fmt: skip
    with relay.store.transaction() as session:
        assert inbound.apply_receipt(session, message.channel or "", receipt, clock.now())
        person = session.scalars(select(Contact).where(Contact.address == PHONE)).one()
        assert person.opt_out_reason == "complaint"
    other = "+15550003333"
    relay.start(other, "Confirm the date", ["Which day?"])
    _settle(relay)
    complaint = Inbound(sender=other, text="abuse complaint (abuse)", kind=InboundKind.COMPLAINT,
                        provider_message_id="<fbl-2@fbl.example.net>")  # fmt: skip
    report = relay.ingest("console", Incoming(messages=[complaint]))
    assert report.stored == 1
    with relay.store.read_transaction() as session:
        person = session.scalars(select(Contact).where(Contact.address == other)).one()
        assert person.opt_out_reason == "complaint"
        stored = session.scalars(select(Message).where(Message.kind == "complaint")).one()
        assert stored.status == "processed"
