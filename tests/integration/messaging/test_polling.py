"""Polling modes through the engine: the position lives in the store, not in the channel."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from messaging_fakes import (
    ACCOUNT,
    FakeTelegram,
    FakeTwilio,
)

from relay.engine.runtime import read_position
from relay.runner.pulse import Pulse, PulseReport

NUMBER = "+15550001111"
PHONE = "+15551230001"


@pytest.fixture
def telegram_relay(make_relay: Callable[..., Any], db_url: str, bot_api: FakeTelegram) -> Any:
    """A relay whose ``tg`` channel polls the fake Bot API."""
    return make_relay(
        db_url,
        None,
        **{
            "channels.tg.type": "telegram",
            "channels.tg.token_env": "BOT_TOKEN",
            "channels.tg.api_url": bot_api.base_url,
            "channels.tg.poll_timeout": 0,
        },
    )


def poll(relay: Any) -> int:
    return Pulse(relay, "test").poll(PulseReport())


def test_telegram_updates_are_read_once_with_the_stored_offset(
    telegram_relay: Any, bot_api: FakeTelegram
) -> None:
    relay = telegram_relay
    first = bot_api.add_message(4242, "/start")
    bot_api.add_message(4242, "hello")
    assert poll(relay) == 2
    assert read_position(relay, "tg") == str(first + 2)
    assert poll(relay) == 0
    assert bot_api.offsets[-1] == first + 2
    assert [m.text for m in relay.contact("telegram:4242").unrouted] == ["/start", "hello"]
    bot_api.add_message(4242, "STOP")
    assert poll(relay) == 1
    assert relay.contact("telegram:4242").opted_out_at is not None


def test_telegram_conversation_by_chat_id(telegram_relay: Any, bot_api: FakeTelegram) -> None:
    relay = telegram_relay
    view = relay.start("telegram:4242", "Confirm the delivery", ["Which day?"], channel="tg")
    Pulse(relay, "test").run()
    assert [m["chat_id"] for m in bot_api.sent] == ["4242"]
    bot_api.add_message(4242, "Thursday")
    Pulse(relay, "test").run(poll=True)
    assert len(bot_api.sent) == 2
    assert relay.get(view.id).state in ("WAITING_FOR_REPLY", "COMPLETED")


def test_twilio_polling_mode(
    make_relay: Callable[..., Any], db_url: str, twilio_api: FakeTwilio
) -> None:
    relay = make_relay(
        db_url,
        None,
        **{
            "channels.sms.type": "sms",
            "channels.sms.account_sid": ACCOUNT,
            "channels.sms.auth_token_env": "TWILIO_TOKEN",
            "channels.sms.from": NUMBER,
            "channels.sms.api_url": twilio_api.base_url,
            "channels.sms.polling": True,
        },
    )
    when = datetime.now(UTC) - timedelta(minutes=5)
    twilio_api.add_inbound(PHONE, NUMBER, "Thursday works", when)
    assert poll(relay) == 1
    assert poll(relay) == 0  # the same second is read again and dropped by its sid
    twilio_api.add_inbound(PHONE, NUMBER, "STOP", when + timedelta(minutes=1))
    assert poll(relay) == 1
    assert relay.contact(PHONE).opted_out_at is not None
