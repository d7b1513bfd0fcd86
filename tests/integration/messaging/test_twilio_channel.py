"""The sms/whatsapp channels against a loopback Twilio Messages API."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from messaging_fakes import ACCOUNT, FakeTwilio

from relay.channels.base import (
    ChannelError,
    ChannelUnavailable,
    Outbound,
    PermanentChannelError,
    RecipientOptedOut,
    make_channel,
)
from relay.channels.twilio import SegmentPacer, parse_inbound, parse_status
from relay.core.values import DeliveryStatus, InboundKind

NUMBER = "+15550001111"
PHONE = "+15551230001"


def channel(fake: FakeTwilio, kind: str = "sms", **extra: Any) -> Any:
    settings = {
        "type": kind,
        "account_sid": ACCOUNT,
        "auth_token_env": "TWILIO_TOKEN",
        "from": NUMBER,
        "public_url": "https://relay.example.org",
        "api_url": fake.base_url,
        "segments_per_second": 0,
        **extra,
    }
    return make_channel(kind, settings)


def message(text: str = "Hello", **extra: Any) -> Outbound:
    return Outbound(7, "r7k2", PHONE, text, "key-7", **extra)


def test_send_creates_a_message_with_a_status_callback(twilio_api: FakeTwilio) -> None:
    sid = channel(twilio_api).send(message("Is Thursday fine?"))
    [sent] = twilio_api.sent
    assert sid == sent.sid and sid.startswith("SM")
    assert sent.form == {
        "To": PHONE,
        "From": NUMBER,
        "Body": "Is Thursday fine?",
        "StatusCallback": "https://relay.example.org/twilio/sms/status",
    }


def test_21610_means_the_recipient_opted_out(twilio_api: FakeTwilio) -> None:
    twilio_api.fail_next(400, 21610, "Attempt to send to unsubscribed recipient")
    with pytest.raises(RecipientOptedOut) as caught:
        channel(twilio_api).send(message())
    assert not caught.value.transient and "21610" in caught.value.message


@pytest.mark.parametrize("code", [63016, 63014])
def test_whatsapp_window_and_block_errors_are_permanent_with_the_reason(
    twilio_api: FakeTwilio, code: int
) -> None:
    twilio_api.fail_next(400, code)
    with pytest.raises(PermanentChannelError) as caught:
        channel(twilio_api).send(message())
    assert str(code) in caught.value.message and "WhatsApp" in caught.value.message


@pytest.mark.parametrize(("status", "header", "wait"), [(429, "7", 7.0), (503, None, None)])
def test_throttling_and_server_errors_are_transient(
    twilio_api: FakeTwilio, status: int, header: str | None, wait: float | None
) -> None:
    twilio_api.fail_next(status, 20429, "Too Many Requests", retry_after=header)
    with pytest.raises(ChannelError) as caught:
        channel(twilio_api).send(message())
    assert caught.value.transient and caught.value.retry_after == wait


def test_bad_credentials_keep_the_message_queued(
    twilio_api: FakeTwilio, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TWILIO_TOKEN", "wrong")
    with pytest.raises(ChannelUnavailable) as caught:
        channel(twilio_api).send(message())
    assert "20003" in caught.value.message and "auth token" in caught.value.message


def test_whatsapp_outside_the_window_without_a_template_sends_nothing(
    twilio_api: FakeTwilio,
) -> None:
    with pytest.raises(PermanentChannelError) as caught:
        channel(twilio_api, "whatsapp").send(message())
    assert "24 hours" in caught.value.message and "template_sid" in caught.value.message
    assert twilio_api.sent == []


def test_whatsapp_inside_the_window_sends_text(twilio_api: FakeTwilio) -> None:
    recent = datetime.now(UTC) - timedelta(hours=2)
    channel(twilio_api, "whatsapp").send(message("Hi", last_inbound_at=recent))
    [sent] = twilio_api.sent
    assert sent.form["To"] == f"whatsapp:{PHONE}" and sent.form["From"] == f"whatsapp:{NUMBER}"
    assert sent.form["Body"] == "Hi"


def test_whatsapp_outside_the_window_sends_the_template(twilio_api: FakeTwilio) -> None:
    old = datetime.now(UTC) - timedelta(hours=30)
    wa = channel(twilio_api, "whatsapp", template_sid="HX123", template_variables={"1": "{text}"})
    wa.send(message("Your parcel", last_inbound_at=old))
    [sent] = twilio_api.sent
    assert sent.form["ContentSid"] == "HX123" and "Body" not in sent.form
    assert sent.form["ContentVariables"] == '{"1": "Your parcel"}'


def test_polling_reads_new_inbound_messages_with_a_cursor(twilio_api: FakeTwilio) -> None:
    sms = channel(twilio_api, polling=True)
    first = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    twilio_api.add_inbound(PHONE, NUMBER, "from last week", first - timedelta(days=7))
    sid = twilio_api.add_inbound(PHONE, NUMBER, "Thursday works", first)
    got = sms.poll(None)
    assert [(m.sender, m.text, m.provider_message_id) for m in got.messages] == [
        (PHONE, "Thursday works", sid)
    ]
    assert got.cursor == first.isoformat()
    later = twilio_api.add_inbound(PHONE, NUMBER, "STOP", first + timedelta(minutes=5))
    again = sms.poll(got.cursor)
    # The cursor's own second comes again (the store drops it by sid); nothing older.
    assert [m.provider_message_id for m in again.messages] == [later, sid]
    assert again.messages[0].kind is InboundKind.UNSUBSCRIBE


def test_check_names_the_missing_token(monkeypatch: pytest.MonkeyPatch) -> None:
    sms = make_channel("sms", {"account_sid": ACCOUNT, "auth_token_env": "NOPE", "from": NUMBER})
    problems = sms.check()
    assert any("NOPE" in p for p in problems)
    assert sms.address_problem(PHONE) is None
    assert "phone number" in sms.address_problem("telegram:42")


@pytest.mark.parametrize(
    "word", ["STOP", "stop", "StopAll", "UNSUBSCRIBE", "cancel", "END", "quit"]
)
def test_carrier_opt_out_words(word: str) -> None:
    inbound = parse_inbound({"From": "whatsapp:" + PHONE, "Body": word, "MessageSid": "SM1"})
    assert inbound.kind is InboundKind.UNSUBSCRIBE and inbound.sender == PHONE


def test_status_callbacks_become_receipts() -> None:
    delivered = parse_status({"MessageSid": "SM1", "MessageStatus": "delivered"})
    assert delivered is not None and delivered.status is DeliveryStatus.DELIVERED
    opted = parse_status({"MessageSid": "SM1", "MessageStatus": "failed", "ErrorCode": "21610"})
    assert opted is not None and opted.opted_out and opted.status is DeliveryStatus.FAILED
    window = parse_status({"MessageSid": "SM1", "MessageStatus": "failed", "ErrorCode": "63016"})
    assert window is not None and window.error is not None and "63016" in window.error
    unknown = parse_status(
        {"MessageSid": "SM1", "MessageStatus": "undelivered", "ErrorCode": "30005"}
    )
    assert unknown is not None and unknown.permanent
    assert parse_status({"MessageSid": "SM1", "MessageStatus": "queued"}) is None


def test_segment_pacer_spaces_a_number_by_segments() -> None:
    now = [100.0]
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    pacer = SegmentPacer(1.0, clock=lambda: now[0], sleep=sleep)
    assert pacer.wait(NUMBER, 3) == 0  # the first goes at once...
    assert pacer.wait(NUMBER, 1) == 3  # ...and holds the number for three seconds
    assert pacer.wait("+15550002222", 1) == 0  # another number is not held
    assert waits == [3]
