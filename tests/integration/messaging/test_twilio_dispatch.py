"""What the dispatcher does with each provider answer, through the real engine and
the loopback Twilio API."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from backends import SQLITE_ONLY
from messaging_fakes import ACCOUNT, FakeTwilio
from sqlalchemy import select

from relay.channels.base import Inbound, Incoming, Outbound, register_channel
from relay.core.errors import RelayError
from relay.engine.contacts.unsubscribe import tokens
from relay.runner.pulse import Pulse
from relay.store.models import Contact, EventRow, Message

NUMBER = "+15550001111"
PHONE = "+15551230001"


@pytest.fixture
def relay(make_relay: Callable[..., Any], db_url: str, twilio_api: FakeTwilio) -> Any:
    settings: dict[str, Any] = {}
    for kind in ("sms", "whatsapp"):
        settings.update(
            {
                f"channels.{kind}.type": kind,
                f"channels.{kind}.account_sid": ACCOUNT,
                f"channels.{kind}.auth_token_env": "TWILIO_TOKEN",
                f"channels.{kind}.from": NUMBER,
                f"channels.{kind}.public_url": "https://relay.example.org",
                f"channels.{kind}.api_url": twilio_api.base_url,
                f"channels.{kind}.segments_per_second": 0,
            }
        )
    settings["channels.tg.type"] = "telegram"
    settings["channels.tg.token_env"] = "TWILIO_TOKEN"
    return make_relay(db_url, None, **settings)


def start(relay: Any, channel: str = "sms") -> str:
    view = relay.start(PHONE, "Confirm the delivery", ["Which day suits you?"], channel=channel)
    Pulse(relay, "test").run()
    return str(view.id)


def outbound(relay: Any) -> list[Message]:
    with relay.store.transaction() as session:
        query = select(Message).where(Message.direction == "outbound").order_by(Message.id)
        return list(session.scalars(query))


def reasons(relay: Any, instance_id: str) -> list[str]:
    with relay.store.transaction() as session:
        query = select(EventRow.reason).where(
            EventRow.instance_id == instance_id, EventRow.to_state.is_not(None)
        )
        return [r or "" for r in session.scalars(query)]


def test_a_send_carries_the_status_callback(relay: Any, twilio_api: FakeTwilio) -> None:
    start(relay)
    [sent] = twilio_api.sent
    assert sent.form["StatusCallback"] == "https://relay.example.org/twilio/sms/status"
    [message] = outbound(relay)
    assert (message.status, message.provider_message_id) == ("sent", sent.sid)


def test_21610_at_send_opts_the_contact_out(relay: Any, twilio_api: FakeTwilio) -> None:
    twilio_api.fail_next(400, 21610, "Attempt to send to unsubscribed recipient")
    instance = start(relay)
    assert relay.contact(PHONE).opted_out_at is not None
    assert [m.status for m in outbound(relay)] == ["blocked"]
    assert relay.get(instance).state not in ("ACTIVE", "WAITING_FOR_REPLY")


@SQLITE_ONLY
def test_bad_credentials_keep_the_message_queued(
    relay: Any, twilio_api: FakeTwilio, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TWILIO_TOKEN", "wrong")
    instance = start(relay)
    [message] = outbound(relay)
    assert (message.status, message.attempts) == ("queued", 0)
    assert "authentication failed" in (message.last_error or "")
    assert "kept queued: " in (relay.get(instance).next_message or "")


@SQLITE_ONLY
def test_429_waits_at_least_retry_after(relay: Any, twilio_api: FakeTwilio) -> None:
    twilio_api.fail_next(429, 20429, "Too Many Requests", retry_after="600")
    before = relay.now()
    start(relay)
    [message] = outbound(relay)
    assert message.status == "queued" and message.attempts == 1
    assert message.next_attempt_at >= before + timedelta(seconds=600)


@pytest.mark.parametrize("code", [63016, 63014])
def test_whatsapp_refusals_go_to_a_human_with_the_reason(
    relay: Any, twilio_api: FakeTwilio, code: int
) -> None:
    twilio_api.fail_next(400, code)
    instance = start(relay)
    assert relay.get(instance).state == "NEEDS_HUMAN_INTERVENTION"
    assert any(str(code) in r for r in reasons(relay, instance))


def test_whatsapp_outside_the_window_without_a_template_is_not_sent(
    relay: Any, twilio_api: FakeTwilio
) -> None:
    instance = start(relay, "whatsapp")
    assert twilio_api.sent == []
    assert relay.get(instance).state == "NEEDS_HUMAN_INTERVENTION"
    assert any("24 hours" in r and "template" in r for r in reasons(relay, instance))
    assert "template_sid" in (relay.get(instance).next_message or "")  # `relay show` says why


def test_whatsapp_after_the_contact_wrote_sends_free_text(
    relay: Any, twilio_api: FakeTwilio
) -> None:
    now = datetime.now(UTC)
    relay.ingest("whatsapp", Incoming(messages=[Inbound(PHONE, "hi", now, "SMfirst")]))
    start(relay, "whatsapp")
    [sent] = twilio_api.sent
    assert sent.form["To"] == f"whatsapp:{PHONE}" and "Body" in sent.form


def test_telegram_refuses_a_phone_number_at_start(relay: Any) -> None:
    with pytest.raises(RelayError) as caught:
        relay.start(PHONE, "Confirm", ["Which day?"], channel="tg")
    assert "chat id" in caught.value.message


class Recording:
    sent: list[Outbound] = []

    def __init__(self, name: str, settings: Any) -> None:
        self.name = name

    def send(self, message: Outbound) -> str:
        Recording.sent.append(message)
        return f"rec-{message.message_id}"

    def poll(self, cursor: str | None) -> Incoming:
        return Incoming()


def test_every_outbound_carries_an_unsubscribe_token(
    make_relay: Callable[..., Any], db_url: str
) -> None:
    Recording.sent = []
    register_channel("recording-test", Recording)
    relay = make_relay(db_url, None, **{"channels.rec.type": "recording-test"})
    instance = start(relay, "rec")
    [message] = Recording.sent
    with relay.store.transaction() as session:
        contact_id = session.scalar(select(Contact.id).where(Contact.address == PHONE))
        assert message.unsubscribe_token is not None
        assert tokens(session, relay.now()).read(message.unsubscribe_token) == (
            contact_id,
            instance,
        )
