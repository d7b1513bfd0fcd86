"""The telegram channel against a loopback Bot API."""

from __future__ import annotations

from typing import Any

import pytest
from messaging_fakes import FakeTelegram

from relay.channels.base import (
    ChannelError,
    ChannelUnavailable,
    Outbound,
    PermanentChannelError,
    make_channel,
)
from relay.core.errors import ConfigError, InvalidInput
from relay.engine.contacts.addresses import normalise_address


def channel(fake: FakeTelegram, **extra: Any) -> Any:
    settings = {"token_env": "BOT_TOKEN", "api_url": fake.base_url, "poll_timeout": 0, **extra}
    return make_channel("telegram", settings)


def test_send_message_to_a_chat(bot_api: FakeTelegram) -> None:
    provider_id = channel(bot_api).send(Outbound(1, "r7k2", "telegram:4242", "Hello", "k1"))
    assert bot_api.sent == [{"chat_id": "4242", "text": "Hello"}]
    assert provider_id == "4242:1"


def test_get_updates_with_the_stored_offset(bot_api: FakeTelegram) -> None:
    tg = channel(bot_api)
    first = bot_api.add_message(4242, "/start")
    bot_api.add_message(4242, "Thursday works")
    got = tg.poll(None)
    assert [(m.sender, m.text) for m in got.messages] == [
        ("telegram:4242", "/start"),
        ("telegram:4242", "Thursday works"),
    ]
    assert got.cursor == str(first + 2)
    assert list(tg.poll(got.cursor).messages) == []  # nothing is read twice
    bot_api.add_message(7, "hi")
    assert [m.text for m in tg.poll(got.cursor).messages] == ["hi"]
    assert bot_api.offsets == [None, first + 2, first + 2]


def test_429_is_transient_with_retry_after(bot_api: FakeTelegram) -> None:
    bot_api.fail_next(429, "Too Many Requests: retry after 5", retry_after=5)
    with pytest.raises(ChannelError) as caught:
        channel(bot_api).send(Outbound(1, None, "telegram:4242", "Hello", "k1"))
    assert caught.value.transient and caught.value.retry_after == 5


def test_a_user_who_never_started_the_bot(bot_api: FakeTelegram) -> None:
    bot_api.fail_next(403, "Forbidden: bot can't initiate conversation with a user")
    with pytest.raises(PermanentChannelError) as caught:
        channel(bot_api).send(Outbound(1, None, "telegram:4242", "Hello", "k1"))
    assert "start" in caught.value.message


def test_a_wrong_token_keeps_messages_queued(
    bot_api: FakeTelegram, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BOT_TOKEN", "1:wrong")
    with pytest.raises(ChannelUnavailable) as caught:
        channel(bot_api).send(Outbound(1, None, "telegram:4242", "Hello", "k1"))
    assert "1:wrong" not in caught.value.message  # the token never shows in an error


def test_address_problem_explains_the_chat_id(bot_api: FakeTelegram) -> None:
    tg = channel(bot_api, bot_username="relay_depot_bot")
    assert tg.address_problem("telegram:4242") is None
    problem = tg.address_problem("+15551230001")
    assert "chat id" in problem and "t.me/relay_depot_bot?start=" in problem


def test_telegram_addresses() -> None:
    assert normalise_address("telegram:4242").value == "telegram:4242"
    assert normalise_address("telegram:-1001234").kind == "telegram"
    with pytest.raises(InvalidInput):
        normalise_address("telegram:bob")


def test_a_deep_links_start_parameter_is_read(bot_api: FakeTelegram) -> None:
    from relay.channels.telegram import start_parameter

    assert start_parameter("/start 12-abc_DEF") == "12-abc_DEF"
    assert start_parameter("/start@depot_bot 12-abc") == "12-abc"
    assert start_parameter("/start") is None
    assert start_parameter("/start not a token!") is None
    assert start_parameter("please /start 12-abc") is None
    bot_api.add_message(4242, "/start 7-xyz")
    [message] = channel(bot_api).poll(None).messages
    assert (message.bind_token, message.text) == ("7-xyz", "/start 7-xyz")


def test_deep_link_needs_the_bot_username(bot_api: FakeTelegram) -> None:
    assert channel(bot_api, bot_username="@depot_bot").deep_link("7-x") == (
        "https://t.me/depot_bot?start=7-x"
    )
    with pytest.raises(ConfigError, match="bot_username"):
        channel(bot_api).deep_link("7-x")
