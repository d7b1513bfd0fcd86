"""Telegram's ``/start <token>``: a chat bound to a contact known by email or phone,
through the real engine, the loopback Bot API and (for the CLI) the real command."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_checks import valid
from messaging_fakes import FakeTelegram
from sqlalchemy import func, select

from relay.core.errors import ConfigError, InvalidInput
from relay.engine.contacts import addresses, unsubscribe
from relay.runner.pulse import Pulse
from relay.store.models import Contact, ContactAlias, EventRow, Instance, Message

ANN = "ann@example.org"
BOT = "depot_bot"


def settings(fake: FakeTelegram, **extra: Any) -> dict[str, Any]:
    base = {
        "channels.tg.type": "telegram",
        "channels.tg.token_env": "BOT_TOKEN",
        "channels.tg.api_url": fake.base_url,
        "channels.tg.poll_timeout": 0,
        "channels.tg.bot_username": BOT,
        "channels.other.type": "telegram",
        "channels.other.token_env": "BOT_TOKEN",
        "channels.other.api_url": fake.base_url,
        "channels.other.bot_username": "other_bot",
        "channels.other.polling": False,
    }
    return {**base, **extra}


@pytest.fixture
def relay(make_relay: Callable[..., Any], db_url: str, bot_api: FakeTelegram) -> Any:
    return make_relay(db_url, None, **settings(bot_api))


def token_of(link: str) -> str:
    prefix = f"https://t.me/{BOT}?start="
    assert link.startswith(prefix)
    return link[len(prefix) :]


def count(relay: Any, model: Any, *where: Any) -> int:
    with relay.store.transaction() as session:
        return int(session.scalar(select(func.count()).select_from(model).where(*where)) or 0)


def poll(relay: Any) -> None:
    report = Pulse(relay, "test").run(poll=True)
    assert not report.errors, report.errors


def test_the_link_names_the_bot_and_an_unforgeable_token(relay: Any) -> None:
    made = relay.contact_link("tg", "Ann@Example.org")
    assert (made.contact, made.channel, made.bound_to) == (ANN, "tg", None)
    token = token_of(made.link)
    assert relay.contact_link("tg", ANN).link == made.link  # stable: one link per contact
    with relay.store.transaction() as session:
        keys = unsubscribe.tokens(session, relay.now())
        contact_id = session.scalar(select(Contact.id).where(Contact.address == ANN))
        assert addresses.read_start_token(keys, "tg", token) == contact_id
        assert addresses.read_start_token(keys, "other", token) is None  # another bot
        forged = f"{contact_id + 1}-{token.partition('-')[2]}"
        assert addresses.read_start_token(keys, "tg", forged) is None
        # An unsubscribe MAC over the same numbers is no start token, and the reverse.
        assert addresses.read_start_token(keys, "tg", f"{contact_id}-{keys.mac('1.-')}") is None
    assert len(token) <= 64


def test_start_binds_the_chat_and_the_conversation_goes_there(
    relay: Any, bot_api: FakeTelegram
) -> None:
    token = token_of(relay.contact_link("tg", ANN).link)
    bot_api.add_message(4242, f"/start {token}")
    poll(relay)
    assert relay.contact_link("tg", ANN).bound_to == "telegram:4242"
    assert count(relay, Message) == 0  # `/start ...` is no reply, and shows nowhere
    with relay.store.transaction() as session:
        [event] = session.scalars(select(EventRow).where(EventRow.kind == "command")).all()
        assert event.data["command"] == "contact bind"
        assert event.data["args"] == {"contact": ANN, "channel": "tg", "chat": "telegram:4242"}

    view = relay.start(ANN, "Confirm the delivery", ["Which day suits you?"], channel="tg")
    Pulse(relay, "test").run()
    assert [m["chat_id"] for m in bot_api.sent] == ["4242"]
    bot_api.add_message(4242, "Thursday works")
    poll(relay)
    [reply] = [m for m in relay.transcript(view.id) if m.direction == "inbound"]
    assert reply.text == "Thursday works"
    assert count(relay, Contact, Contact.address == "telegram:4242") == 0  # Ann's, not a new one


def test_an_unbound_contact_is_refused_at_start_and_nothing_is_written(relay: Any) -> None:
    with pytest.raises(ConfigError) as caught:
        relay.start("bob@example.org", "Confirm", ["Which day?"], channel="tg")
    message = caught.value.message
    assert "relay contact link tg bob@example.org" in message and "\n" not in message
    assert f"t.me/{BOT}?start=" in message
    assert count(relay, Contact) == 0 and count(relay, Instance) == 0
    # A numeric chat id needs no binding.
    assert relay.start("telegram:777", "Confirm", ["Which day?"], channel="tg").state == "CREATED"


def test_a_forged_or_foreign_token_binds_nothing(relay: Any, bot_api: FakeTelegram) -> None:
    token = token_of(relay.contact_link("tg", ANN).link)
    contact_id, _, mac = token.partition("-")
    bot_api.add_message(4242, f"/start {int(contact_id) + 1}-{mac}")
    bot_api.add_message(4243, "/start 1-AAAAAAAAAAAAAAAAAAAAAA")
    poll(relay)
    assert count(relay, ContactAlias) == 0
    # Kept like any other message from those chats, never dropped.
    assert count(relay, Message, Message.direction == "inbound") == 2


def test_the_newest_start_wins(relay: Any, bot_api: FakeTelegram) -> None:
    token = token_of(relay.contact_link("tg", ANN).link)
    bot_api.add_message(4242, f"/start {token}")
    poll(relay)
    bot_api.add_message(5151, f"/start {token}")  # Ann's new account
    poll(relay)
    assert relay.contact_link("tg", ANN).bound_to == "telegram:5151"
    assert count(relay, ContactAlias) == 1


def test_link_refusals_write_nothing(
    make_relay: Callable[..., Any], db_url: str, bot_api: FakeTelegram
) -> None:
    relay = make_relay(
        db_url,
        None,
        **settings(bot_api, **{"channels.tg.bot_username": ""}),
        **{"channels.mail.type": "console"},
    )
    with pytest.raises(ConfigError, match="bot_username"):
        relay.contact_link("tg", ANN)
    with pytest.raises(InvalidInput, match="telegram channels"):
        relay.contact_link("mail", ANN)
    with pytest.raises(InvalidInput, match="chat id already"):
        relay.contact_link("other", "telegram:4242")
    assert count(relay, Contact) == 0


def test_the_cli_prints_the_link_and_refuses_an_unbound_start(
    cli: Callable[..., Any], bot_api: FakeTelegram, tmp_path: Path
) -> None:
    (tmp_path / "relay.toml").write_text(
        "[channels.tg]\n"
        'type = "telegram"\n'
        'token_env = "BOT_TOKEN"\n'
        f'api_url = "{bot_api.base_url}"\n'
        f'bot_username = "{BOT}"\n'
    )
    made = cli("contact", "link", "tg", ANN, "--json")
    assert made.exit_code == 0, made
    valid("contact-link", made.json())
    assert made.json()["link"].startswith(f"https://t.me/{BOT}?start=")
    shown = cli("contact", "link", "tg", ANN)
    assert made.json()["link"] in shown.stdout and "waiting for their Start" in shown.stdout
    refused = cli("start", "bob@example.org", "-o", "Go", "-t", "Which day?", "--channel", "tg")
    assert refused.exit_code == 2, refused
    assert refused.stderr.count("\n") == 1 and "relay contact link tg" in refused.stderr
    missing = cli("contact", "link", "nope", ANN)
    assert missing.exit_code == 2 and missing.stderr.count("\n") == 1
