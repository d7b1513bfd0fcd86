"""Channel fallback end to end: one conversation on a ladder WhatsApp → SMS → email,
through relay's engine, the loopback Twilio API, a real SMTP server (aiosmtpd) and
a real IMAP server (pymap). Receipts go in as ``relay serve`` hands them over
(``Relay.ingest`` of a parsed status callback); the clock is a FakeClock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default as default_policy
from typing import Any

import pytest
from messaging_fakes import ACCOUNT, TOKEN, FakeTwilio, fake_twilio
from sqlalchemy import select

from relay.channels.base import Incoming
from relay.channels.twilio import parse_status
from relay.core.errors import ConfigError, InvalidInput
from relay.runner.pulse import Pulse
from relay.store.models import EventRow
from relay.testing import FakeClock

NUMBER = "+15550001111"
PHONE = "+15551230001"
ALICE = "alice@example.com"
TEMPLATE = "HX" + "0" * 32
TODOS = ["Which day suits you?"]


@pytest.fixture
def clock() -> FakeClock:
    """Today: the IMAP server stamps mail with the real arrival time."""
    return FakeClock(datetime.now(UTC).replace(microsecond=0))


@pytest.fixture
def twilio_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTwilio]:
    monkeypatch.setenv("TWILIO_TOKEN", TOKEN)
    with fake_twilio() as fake:
        yield fake


@pytest.fixture
def relay(make_relay, db_url, clock, channels) -> Any:
    return make_relay(db_url, clock, **channels)


@pytest.fixture
def channels(smtp_server, imap_server, twilio_api) -> dict[str, Any]:
    """WhatsApp (with a template), SMS and email on the loopback servers."""
    settings: dict[str, Any] = {}
    for kind in ("sms", "whatsapp"):
        settings |= {
            f"channels.{kind}.type": kind,
            f"channels.{kind}.account_sid": ACCOUNT,
            f"channels.{kind}.auth_token_env": "TWILIO_TOKEN",
            f"channels.{kind}.from": NUMBER,
            f"channels.{kind}.public_url": "https://relay.example.org",
            f"channels.{kind}.api_url": twilio_api.base_url,
            f"channels.{kind}.segments_per_second": 0,
        }
    settings["channels.whatsapp.template_sid"] = TEMPLATE
    mail = {"type": "email", "host": smtp_server.host, "port": smtp_server.port}
    mail |= {"from": "sales@example.org", "from_name": "Ana from the Depot"}
    mail |= imap_server.settings()
    settings |= {f"channels.email.{key}": value for key, value in mail.items()}
    return settings


def pulse(relay: Any) -> None:
    report = Pulse(relay, owner="test").run(poll=True)
    assert report.errors == []


def mails(smtp_server: Any) -> list[EmailMessage]:
    return [message_from_bytes(m.content, policy=default_policy) for m in smtp_server.messages]


def callback(relay: Any, sid: str, status: str, code: int | None = None) -> None:
    """A Twilio status callback, as ``relay serve`` hands it to the engine."""
    form = {"MessageSid": sid, "MessageStatus": status, "AccountSid": ACCOUNT}
    if code:
        form["ErrorCode"] = str(code)
    receipt = parse_status(form)
    assert receipt is not None
    relay.ingest("whatsapp", Incoming(receipts=[receipt]))


def channel_events(relay: Any, instance_id: str) -> list[dict[str, Any]]:
    with relay.store.transaction() as session:
        query = select(EventRow.data).where(
            EventRow.instance_id == instance_id, EventRow.kind == "channel.changed"
        )
        return [dict(data or {}) for data in session.scalars(query.order_by(EventRow.id))]


def test_whatsapp_then_sms_after_63016_then_email_after_the_silence(
    relay: Any, twilio_api: FakeTwilio, smtp_server: Any, imap_server: Any, clock: FakeClock
) -> None:
    relay.set_contact(PHONE, addresses={"email": ALICE})
    view = relay.start(
        PHONE,
        "confirm the delivery of order 1042",
        TODOS,
        channel="whatsapp,sms,email",
        heartbeat="1d",
        fallback_after="2d",
        subject="Your order 1042",
    )
    assert (view.channel, view.channels) == ("whatsapp", ("whatsapp", "sms", "email"))
    pulse(relay)
    [whatsapp] = twilio_api.sent
    assert whatsapp.form["To"] == f"whatsapp:{PHONE}"
    assert whatsapp.form["ContentSid"] == TEMPLATE  # the contact never wrote: a template

    # WhatsApp fails it (63016): the message goes again on SMS, nobody is needed.
    callback(relay, whatsapp.sid, "failed", 63016)
    pulse(relay)
    sms = twilio_api.sent[1]
    assert (sms.form["To"], sms.form["Body"]) == (PHONE, relay.transcript(view.id)[0].text)
    assert "ContentSid" not in sms.form
    now = relay.get(view.id)
    assert (now.state, now.channel) == ("WAITING_FOR_REPLY", "sms")

    # A late, repeated failure of the WhatsApp message sends nothing more.
    callback(relay, whatsapp.sid, "undelivered", 63016)
    callback(relay, whatsapp.sid, "failed", 63016)
    pulse(relay)
    assert len(twilio_api.sent) == 2 and smtp_server.messages == []
    assert relay.get(view.id).channel == "sms"

    # A day of silence: the follow-up stays on SMS (the fallback waits 2 days).
    clock.advance(timedelta(days=1, minutes=1))
    pulse(relay)
    assert len(twilio_api.sent) == 3 and twilio_api.sent[2].form["To"] == PHONE
    assert smtp_server.messages == []

    # Two days since SMS first went out: the next follow-up goes by email, threaded anew.
    clock.advance(timedelta(days=1, minutes=1))
    pulse(relay)
    assert len(twilio_api.sent) == 3
    [mail] = mails(smtp_server)
    assert mail["To"] == ALICE and mail["Subject"] == "Your order 1042"
    assert relay.get(view.id).channel == "email"
    assert relay.get(view.id).follow_up_count == 2  # counted across channels

    # Alice answers by email: the reply is the conversation's, which completes.
    reply = "\n".join(
        [
            f"From: {ALICE}",
            "To: sales@example.org",
            "Subject: Re: Your order 1042",
            "Message-ID: <alice-1@mail.example.com>",
            f"In-Reply-To: {mail['Message-ID']}",
            f"References: {mail['Message-ID']}",
            "",
            "Thursday works for me.",
        ]
    )
    imap_server.append(reply)
    pulse(relay)
    done = relay.get(view.id)
    assert done.state == "COMPLETED"
    assert mails(smtp_server)[-1]["In-Reply-To"] == "<alice-1@mail.example.com>"

    transcript = relay.transcript(view.id)
    assert [(m.direction, m.channel) for m in transcript] == [
        ("outbound", "whatsapp"),
        ("outbound", "sms"),
        ("outbound", "sms"),
        ("outbound", "email"),
        ("inbound", "email"),
        ("outbound", "email"),
    ]
    assert transcript[0].status == "failed" and transcript[1].status == "sent"
    assert [(e["from"], e["to"]) for e in channel_events(relay, view.id)] == [
        ("whatsapp", "sms"),
        ("sms", "email"),
    ]


def test_a_reply_on_another_rung_brings_the_conversation_there(
    relay: Any, twilio_api: FakeTwilio, smtp_server: Any
) -> None:
    relay.set_contact(PHONE, addresses={"email": ALICE})
    view = relay.start(PHONE, "confirm the delivery", ["a", "b"], channel="sms,email")
    pulse(relay)
    assert len(twilio_api.sent) == 1
    relay.receive(ALICE, "email me instead", channel="email")
    pulse(relay)
    assert relay.get(view.id).channel == "email"
    [mail] = mails(smtp_server)
    assert mail["To"] == ALICE


def test_a_ladder_starts_on_the_first_channel_that_reaches_the_contact(
    relay: Any, twilio_api: FakeTwilio, smtp_server: Any
) -> None:
    view = relay.start(ALICE, "confirm the delivery", TODOS, channel="sms,email")
    assert (view.channel, view.channels) == ("email", ("email",))
    pulse(relay)
    assert twilio_api.sent == [] and len(smtp_server.messages) == 1
    with pytest.raises(ConfigError, match=r"E\.164"):
        relay.start("bob@example.com", "x", TODOS, channel="sms,whatsapp")
    with pytest.raises(InvalidInput, match="twice"):
        relay.start(PHONE, "x", TODOS, channel="sms,sms")


def test_one_channel_on_another_address_of_the_contact(
    relay: Any, twilio_api: FakeTwilio, smtp_server: Any
) -> None:
    """A contact known by phone, written to by email: its email address is used."""
    relay.set_contact(PHONE, addresses={"email": ALICE})
    view = relay.start(PHONE, "confirm the delivery", TODOS, channel="email")
    pulse(relay)
    assert view.channel == "email"
    [mail] = mails(smtp_server)
    assert mail["To"] == ALICE
    assert relay.contact(ALICE).address == PHONE  # one person, known by either address


def test_whatsapp_that_cannot_write_first_falls_back_at_send(
    channels: dict[str, Any], twilio_api: FakeTwilio, make_relay: Any, db_url: str
) -> None:
    """No template: WhatsApp cannot write first, so the first message goes by SMS."""
    untemplated = {k: v for k, v in channels.items() if "template_sid" not in k}
    plain = make_relay(db_url, None, **untemplated)
    view = plain.start(PHONE, "confirm the delivery", TODOS, channel="whatsapp,sms")
    pulse(plain)
    assert [m.form["To"] for m in twilio_api.sent] == [PHONE]
    shown = plain.get(view.id)
    assert (shown.state, shown.channel) == ("WAITING_FOR_REPLY", "sms")
    whatsapp, sms = plain.transcript(view.id)
    assert (whatsapp.channel, whatsapp.status) == ("whatsapp", "failed")
    assert "24 hours" in (whatsapp.last_error or "")
    assert (sms.channel, sms.status) == ("sms", "sent")


def test_a_failure_on_the_last_channel_goes_to_a_person(relay: Any, twilio_api: FakeTwilio) -> None:
    view = relay.start(PHONE, "confirm the delivery", TODOS, channel="whatsapp,sms")
    pulse(relay)
    callback(relay, twilio_api.sent[0].sid, "failed", 63016)
    pulse(relay)
    sms = twilio_api.sent[1]
    form = {"MessageSid": sms.sid, "MessageStatus": "undelivered", "ErrorCode": "30003"}
    receipt = parse_status({**form, "AccountSid": ACCOUNT})
    assert receipt is not None
    relay.ingest("sms", Incoming(receipts=[receipt]))
    shown = relay.get(view.id)
    assert (shown.state, shown.channel) == ("NEEDS_HUMAN_INTERVENTION", "sms")
