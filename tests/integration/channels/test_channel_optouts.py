"""Per-channel opt-outs (``[compliance] optout_scope = "channel"``), end to end on
the loopback Twilio API and SMTP server: a STOP by SMS stops the phone only, the
ladder goes on by email; an email unsubscribe then stops email too; an opt-in
restores one kind; the outbox screen refuses what is queued to an opted-out kind.
The default scope (a no stops every channel) is covered by the opt-out tests."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from messaging_fakes import ACCOUNT, TOKEN, FakeTwilio, fake_twilio

from relay.core.errors import ConfigError, InvalidInput
from relay.runner.pulse import Pulse
from relay.store import contact_addresses
from relay.testing import FakeClock

NUMBER = "+15550001111"
PHONE = "+15551230001"
ALICE = "alice@example.com"
TODOS = ["Which day suits you?", "Morning or afternoon?"]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime(2026, 3, 3, 15, 0, tzinfo=UTC))


@pytest.fixture
def twilio_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTwilio]:
    monkeypatch.setenv("TWILIO_TOKEN", TOKEN)
    with fake_twilio() as fake:
        yield fake


def _settings(smtp_server: Any, twilio_api: FakeTwilio, scope: str) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "compliance.optout_scope": scope,
        "compliance.legal_hours": False,
        "channels.email.type": "email",
        "channels.email.host": smtp_server.host,
        "channels.email.port": smtp_server.port,
        "channels.email.from": "sales@example.org",
    }
    for kind in ("sms", "whatsapp"):
        settings |= {
            f"channels.{kind}.type": kind,
            f"channels.{kind}.account_sid": ACCOUNT,
            f"channels.{kind}.auth_token_env": "TWILIO_TOKEN",
            f"channels.{kind}.from": NUMBER,
            f"channels.{kind}.api_url": twilio_api.base_url,
            f"channels.{kind}.public_url": "https://relay.example.org",
            f"channels.{kind}.segments_per_second": 0,
        }
    return settings


@pytest.fixture
def relay(make_relay, db_url, clock, smtp_server, twilio_api) -> Any:
    return make_relay(db_url, clock, **_settings(smtp_server, twilio_api, "channel"))


def pulse(relay: Any) -> None:
    assert Pulse(relay, owner="test").run(poll=False).errors == []


def test_sms_stop_stops_the_phone_only_and_the_ladder_goes_on_by_email(
    relay: Any, twilio_api: FakeTwilio, smtp_server: Any, clock: FakeClock
) -> None:
    relay.set_contact(PHONE, addresses={"email": ALICE})
    view = relay.start(PHONE, "confirm the delivery", TODOS, channel="sms,email", heartbeat="1d")
    pulse(relay)
    assert len(twilio_api.sent) == 1 and smtp_server.messages == []

    relay.receive(PHONE, "STOP", channel="sms")
    shown = relay.contact(PHONE)
    assert shown.opted_out_at is None and set(shown.opted_out_kinds) == {"phone"}
    assert shown.to_json()["opted_out_kinds"]["phone"]
    assert relay.get(view.id).channel == "email"  # moved off the phone at once

    clock.advance(timedelta(days=1, minutes=1))
    pulse(relay)
    assert len(twilio_api.sent) == 1  # nothing more by SMS
    [mail] = smtp_server.messages
    assert mail.rcpt_tos == [ALICE]

    # A new conversation skips the phone: SMS is left out of its ladder.
    relay.cancel(view.id)
    again = relay.start(PHONE, "x", TODOS, channel="sms,whatsapp,email", defer=True)
    assert (again.channel, again.channels) == ("email", ("email",))
    relay.cancel(again.id)
    with pytest.raises(ConfigError, match="opted out of phone"):
        relay.start(PHONE, "x", TODOS, channel="whatsapp", defer=True)

    # An email unsubscribe stops email too; a later start by email is refused.
    relay.receive(ALICE, "unsubscribe", channel="email")
    assert set(relay.contact(PHONE).opted_out_kinds) == {"phone", "email"}
    with pytest.raises(ConfigError, match="opted out of email"):
        relay.start(PHONE, "x", TODOS, channel="email", defer=True)

    # Opting back in on the phone restores SMS, and SMS only.
    relay.opt_in(PHONE, channel_kind="sms")
    assert set(relay.contact(PHONE).opted_out_kinds) == {"email"}
    back = relay.start(PHONE, "x", TODOS, channel="email,sms")
    assert back.channel == "sms"
    pulse(relay)
    assert len(twilio_api.sent) == 2 and len(smtp_server.messages) == 1


def test_the_screen_refuses_a_queued_message_to_an_opted_out_kind(
    relay: Any, twilio_api: FakeTwilio, smtp_server: Any
) -> None:
    """The last word is the outbox's: a message written to the phone before its
    opt-out was recorded is blocked at send, not sent."""
    relay.set_contact(PHONE, addresses={"email": ALICE})
    view = relay.start(
        PHONE, "confirm the delivery", TODOS, channel="sms,email", approval="first", defer=True
    )
    pulse(relay)
    assert twilio_api.sent == []
    [draft] = relay.drafts(view.id)
    with relay.store.transaction() as session:  # the mark alone: only the screen stands
        person = contact_addresses.contact_id_for(session, PHONE)
        assert person is not None
        contact_addresses.mark_opted_out(session, person, "phone", relay.now(), "test")
    relay.approve(draft.id)
    pulse(relay)
    assert twilio_api.sent == []
    blocked = [m for m in relay.transcript(view.id) if m.direction == "outbound"]
    assert blocked and all(m.status in ("blocked", "queued") for m in blocked)
    assert any(m.status == "blocked" for m in blocked)


def test_an_email_unsubscribe_on_a_one_channel_conversation_ends_it(
    relay: Any, smtp_server: Any
) -> None:
    view = relay.start(ALICE, "confirm the delivery", TODOS, channel="email")
    pulse(relay)
    relay.receive(ALICE, "Please unsubscribe me", channel="email")
    assert relay.get(view.id).state not in ("WAITING_FOR_REPLY", "WAITING_FOR_AGENT")
    assert set(relay.contact(ALICE).opted_out_kinds) == {"email"}
    with pytest.raises(ConfigError, match="opted out of email"):
        relay.start(ALICE, "x", TODOS, channel="email")
    relay.opt_in(ALICE)  # wholly: every kind
    assert relay.contact(ALICE).opted_out_kinds == {}
    relay.start(ALICE, "x", TODOS, channel="email")
    pulse(relay)
    assert len(smtp_server.messages) == 2


def test_a_complaint_stops_the_whole_contact_whatever_the_scope(relay: Any) -> None:
    from relay.channels.base import Inbound, Incoming
    from relay.core.values import InboundKind

    relay.set_contact(PHONE, addresses={"email": ALICE})
    complaint = Inbound(sender=ALICE, text="spam report", kind=InboundKind.COMPLAINT)
    relay.ingest("email", Incoming(messages=[complaint]))
    assert relay.contact(PHONE).opted_out_at is not None


def test_channel_kind_needs_the_channel_scope(
    make_relay: Any, db_url: str, smtp_server: Any, twilio_api: FakeTwilio
) -> None:
    plain = make_relay(db_url, None, **_settings(smtp_server, twilio_api, "contact"))
    plain.set_contact(PHONE, addresses={"email": ALICE})
    with pytest.raises(InvalidInput, match="optout_scope"):
        plain.opt_out(PHONE, channel_kind="sms")
    with pytest.raises(InvalidInput, match="--channel-kind must be one of"):
        plain.opt_in(PHONE, channel_kind="fax")
    plain.receive(PHONE, "STOP", channel="sms")  # the default: every channel
    assert plain.contact(ALICE).opted_out_at is not None
    assert plain.contact(ALICE).opted_out_kinds == {}
