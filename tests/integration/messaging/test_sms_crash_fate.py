"""A crash between handing an SMS to Twilio and recording it: the message is
reconciled with Twilio's message list before anything is sent again, and one
whose fate nobody can tell waits for the operator (``relay retry``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from messaging_fakes import ACCOUNT, FakeTwilio, Scripted, TwilioMessage
from sqlalchemy import select

from relay.channels.twilio import TwilioChannel
from relay.engine.outbox.dispatcher import SEND_LEASE
from relay.runner.pulse import Pulse
from relay.store.models import Message

NUMBER = "+15550001111"
PHONE = "+15551230001"


class ProcessDied(BaseException):
    """Stands in for the process being killed: no ``except Exception`` catches it."""


@pytest.fixture
def relay(make_relay: Callable[..., Any], db_url: str, clock: Any, twilio_api: FakeTwilio) -> Any:
    twilio_api.now = clock.now
    return make_relay(db_url, clock, **sms_settings(twilio_api))


def sms_settings(twilio_api: FakeTwilio) -> dict[str, Any]:
    """An ``sms`` channel on the loopback Twilio, as the default channel."""
    return {
        "defaults.channel": "sms",
        "channels.sms.type": "sms",
        "channels.sms.account_sid": ACCOUNT,
        "channels.sms.auth_token_env": "TWILIO_TOKEN",
        "channels.sms.from": NUMBER,
        "channels.sms.public_url": "https://relay.example.org",
        "channels.sms.api_url": twilio_api.base_url,
        "channels.sms.segments_per_second": 0,
    }


@pytest.fixture
def dies(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """``dies("after")``: the next send reaches Twilio, then the process dies before
    recording it; ``dies("before")``: it dies having claimed the message, before
    Twilio is called."""
    real = TwilioChannel.send
    when: list[str] = []

    def send(self: TwilioChannel, message: Any) -> str:
        if when == ["before"]:
            when.clear()
            raise ProcessDied
        sid = real(self, message)
        if when == ["after"]:
            when.clear()
            raise ProcessDied
        return sid

    monkeypatch.setattr(TwilioChannel, "send", send)
    yield when.append


def started_and_killed(relay: Any, clock: Any) -> Message:
    """A conversation whose first SMS was being sent when the process died; a new
    process once the send's lease ran out."""
    relay.start(PHONE, "Confirm the delivery", ["Which day suits you?"])
    with pytest.raises(ProcessDied):
        Pulse(relay, "dead").run()
    [message] = outbound(relay)
    assert message.status == "sending"
    clock.advance(SEND_LEASE + timedelta(seconds=1))
    return message


def outbound(relay: Any) -> list[Message]:
    with relay.store.transaction() as session:
        query = select(Message).where(Message.direction == "outbound").order_by(Message.id)
        return list(session.scalars(query))


def test_an_sms_twilio_took_before_the_crash_is_recorded_not_sent_again(
    relay: Any, clock: Any, twilio_api: FakeTwilio, dies: Callable[[str], None]
) -> None:
    dies("after")
    started_and_killed(relay, clock)
    Pulse(relay, "new").run()
    [sms] = twilio_api.sent
    [message] = outbound(relay)
    assert (message.status, message.provider_message_id) == ("sent", sms.sid)
    assert any("To=%2B15551230001" in path for path in twilio_api.list_requests)
    Pulse(relay, "new").run()
    assert len(twilio_api.sent) == 1


def test_an_sms_twilio_never_got_is_sent_once_after_the_crash(
    relay: Any, clock: Any, twilio_api: FakeTwilio, dies: Callable[[str], None]
) -> None:
    dies("before")
    started_and_killed(relay, clock)
    assert twilio_api.sent == []
    Pulse(relay, "new").run()
    [sms] = twilio_api.sent
    [message] = outbound(relay)
    assert (message.status, message.provider_message_id) == ("sent", sms.sid)


def test_an_older_sms_with_the_same_text_is_not_taken_for_it(
    relay: Any, clock: Any, twilio_api: FakeTwilio, dies: Callable[[str], None]
) -> None:
    """Only what Twilio created from the message's writing on counts."""
    dies("before")
    relay.start(PHONE, "Confirm the delivery", ["Which day suits you?"])
    with pytest.raises(ProcessDied):
        Pulse(relay, "dead").run()
    [message] = outbound(relay)
    older = twilio_api.now() - timedelta(hours=1)
    form = {"To": PHONE, "From": NUMBER, "Body": message.body}
    twilio_api.sent.append(TwilioMessage("SMolder", form, older))
    clock.advance(SEND_LEASE + timedelta(seconds=1))
    Pulse(relay, "new").run()
    assert len(twilio_api.sent) == 2
    assert outbound(relay)[0].status == "sent"


def test_a_same_text_sms_of_another_conversation_is_not_taken_for_it(
    relay: Any, clock: Any, twilio_api: FakeTwilio, dies: Callable[[str], None]
) -> None:
    """A contact's conversations open with the same text: the one relay recorded
    for the first conversation is listed by Twilio too, and is not the second's."""
    first = relay.start(PHONE, "Confirm the delivery", ["Which day suits you?"])
    Pulse(relay, "live").run()
    [earlier] = twilio_api.sent
    relay.cancel(first.id)
    clock.advance(timedelta(seconds=5))
    dies("before")
    relay.start(PHONE, "Confirm the delivery", ["Which day suits you?"])
    with pytest.raises(ProcessDied):
        Pulse(relay, "dead").run()
    clock.advance(SEND_LEASE + timedelta(seconds=1))
    [sent, doubted] = outbound(relay)
    assert (doubted.status, doubted.body) == ("sending", sent.body)
    assert sent.provider_message_id == earlier.sid
    Pulse(relay, "new").run()
    assert len(twilio_api.sent) == 2  # sent, not taken for the first one's SMS
    [sent, doubted] = outbound(relay)
    assert doubted.status == "sent"
    assert doubted.provider_message_id == twilio_api.sent[1].sid != earlier.sid


def test_two_messages_in_doubt_with_one_text_take_one_listed_sms_each(
    relay: Any, clock: Any, twilio_api: FakeTwilio, dies: Callable[[str], None]
) -> None:
    """Two messages with one text, both left ``sending`` and Twilio holding one:
    one is recorded with it, the other goes."""
    view = relay.start(PHONE, "Confirm the delivery", ["Which day suits you?"])
    Pulse(relay, "live").run()
    relay.send(view.id, "Are you there?")
    relay.send(view.id, "Are you there?")
    dies("after")
    with pytest.raises(ProcessDied):
        Pulse(relay, "dead").run()
    assert [m.status for m in outbound(relay)] == ["sent", "sending", "sending"]
    assert len(twilio_api.sent) == 2
    clock.advance(SEND_LEASE + timedelta(seconds=1))
    Pulse(relay, "new").run()
    assert len(twilio_api.sent) == 3
    messages = outbound(relay)
    assert [m.status for m in messages] == ["sent", "sent", "sent"]
    assert len({m.provider_message_id for m in messages}) == 3


def test_when_twilio_cannot_tell_the_fate_is_unknown_until_the_operator_retries(
    relay: Any, clock: Any, twilio_api: FakeTwilio, dies: Callable[[str], None]
) -> None:
    dies("after")
    killed = started_and_killed(relay, clock)
    twilio_api.list_errors.append(Scripted(503, {"code": 20500, "message": "down"}))
    Pulse(relay, "new").run()
    [message] = outbound(relay)
    assert message.status == "unknown"
    assert "fate unknown" in (message.last_error or "")
    assert len(twilio_api.sent) == 1

    # Nothing goes on its own, however long one waits; the doctor names it.
    clock.advance(timedelta(hours=3))
    Pulse(relay, "new").run()
    assert len(twilio_api.sent) == 1
    [notice] = [n for n in relay.notices() if n.subject == f"message {killed.id}"]
    assert f"relay retry {killed.id}" in notice.problem
    assert relay.check() == []  # it breaks no rule
    view = relay.get(killed.instance_id)
    assert view.forecast is not None and view.forecast.next.value == "person"
    assert f"relay retry {killed.id}" in (view.forecast.detail or "")

    # The operator checked with Twilio and allows a second hand-over.
    assert relay.retry(killed.id).status == "queued"
    Pulse(relay, "new").run()
    assert len(twilio_api.sent) == 2
    assert outbound(relay)[0].status == "sent"


def test_resend_unknown_lets_the_outbox_send_again_when_nobody_can_tell(
    make_relay: Callable[..., Any],
    db_url: str,
    clock: Any,
    twilio_api: FakeTwilio,
    dies: Callable[[str], None],
) -> None:
    twilio_api.now = clock.now
    settings = {**sms_settings(twilio_api), "outbox.resend_unknown": True}
    relay = make_relay(db_url, clock, **settings)
    dies("after")
    started_and_killed(relay, clock)
    twilio_api.list_errors.append(Scripted(503, {"code": 20500, "message": "down"}))
    Pulse(relay, "new").run()
    assert len(twilio_api.sent) == 2
    assert outbound(relay)[0].status == "sent"
