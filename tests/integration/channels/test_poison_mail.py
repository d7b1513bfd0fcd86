"""No poison pill in a mailbox: each crafted mail, fed through a real IMAP server
(pymap) on loopback, is stored cleaned or kept aside as rejected with its reason,
and the good reply after it is stored, on SQLite and PostgreSQL (issue 32)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.exc import DataError

from relay.core.storable import raw_bytes
from relay.runner.pulse import Pulse
from relay.store.models import InboundReject, Message
from relay.testing import FakeClock

ALICE = "alice@example.com"

HEAD = "From: Alice <alice@example.com>\r\nTo: sales@example.org\r\nSubject: Re: hi\r\n"

CRAFTED: dict[str, bytes] = {
    "nul in Message-ID": HEAD.encode() + b"Message-ID: =?utf-8?q?=00?=\r\n\r\nnul id\r\n",
    "nul in In-Reply-To": HEAD.encode()
    + b"Message-ID: <m2@x>\r\nIn-Reply-To: =?utf-8?q?<a=00b@relay>?=\r\n"
    + b"References: =?utf-8?q?<c=00d@relay>?=\r\n\r\nnul reply\r\n",
    "unterminated quote in Cc": HEAD.encode()
    + b'Cc: "x" <\r\nMessage-ID: <m3@x>\r\n\r\nbroken cc\r\n',
    "Cc the parser chokes on": HEAD.encode()
    + b"Cc: a@[127.0.0.1\r\nMessage-ID: <m4@x>\r\n\r\nbroken cc 2\r\n",
    "unknown charset, not UTF-8": HEAD.encode()
    + b"Message-ID: <m5@x>\r\nContent-Type: text/plain; charset=x-nonsense\r\n\r\nb\xe9\xffody\r\n",
    "nul in the From name": b"From: =?utf-8?q?Al=00ice?= <alice@example.com>\r\n"
    + b"To: sales@example.org\r\nMessage-ID: <m6@x>\r\n\r\nnul name\r\n",
    "oversize part": HEAD.encode() + b"Message-ID: <m7@x>\r\n\r\n" + b"x" * 150_000 + b"\r\n",
}

GOOD = HEAD + "Message-ID: <good@x>\r\n\r\nThursday works.\r\n"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime.now(UTC).replace(microsecond=0))


@pytest.fixture
def mail_relay(make_relay, db_url, clock, smtp_server, imap_server):
    settings = {"type": "email", "host": smtp_server.host, "port": smtp_server.port}
    settings |= {"from": "sales@example.org"} | imap_server.settings()
    overrides = {f"channels.email.{key}": value for key, value in settings.items()}
    return make_relay(db_url, clock, **overrides, **{"defaults.channel": "email"})


def inbound(relay: Any) -> list[Message]:
    with relay.store.transaction() as session:
        query = select(Message).where(Message.direction == "inbound").order_by(Message.id)
        return list(session.scalars(query).all())


def rejected(relay: Any) -> list[InboundReject]:
    with relay.store.transaction() as session:
        return list(session.scalars(select(InboundReject).order_by(InboundReject.id)).all())


def test_each_crafted_mail_is_stored_cleaned_and_the_next_reply_is_stored(mail_relay, imap_server):
    relay = mail_relay
    for raw in CRAFTED.values():
        imap_server.append(raw)
    imap_server.append(GOOD)
    report = Pulse(relay, owner="test").run(poll=True)
    assert report.errors == []
    stored = inbound(relay)
    bodies = [m.body for m in stored]
    assert bodies[-1] == "Thursday works."
    assert len(stored) == len(CRAFTED) + 1  # none lost, none kept aside
    by_id = {m.provider_message_id: m for m in stored}
    assert "\x00" not in "".join(f"{m.provider_message_id}{m.refs}{m.body}" for m in stored)
    assert by_id["<m2@x>"].refs == "<ab@relay>\n<cd@relay>"
    assert by_id["<m3@x>"].body == "broken cc" and by_id["<m4@x>"].body == "broken cc 2"
    oversize = by_id["<m7@x>"]
    assert len(oversize.body) == 100_000 and "truncated" in (oversize.note or "")
    # The raw bytes are kept as they came, even those that are not UTF-8.
    odd = by_id["<m5@x>"]
    assert b"b\xe9\xffody" in raw_bytes(odd.raw or "")
    # The position moved past all of them: the next poll reads nothing again.
    again = Pulse(relay, owner="test").run(poll=True)
    assert again.errors == [] and len(inbound(relay)) == len(stored)


def test_a_mail_the_parser_cannot_read_is_kept_aside_and_listed(
    mail_relay, imap_server, monkeypatch, cli
):
    from relay.channels.mail import parse

    real = parse.parse_mail

    def failing(raw: bytes, arrived: Any, mailbox: Any) -> Any:
        if b"<poison@x>" in raw:
            raise RecursionError("maximum recursion depth exceeded")
        return real(raw, arrived, mailbox)

    monkeypatch.setattr(parse, "parse_mail", failing)
    poison = HEAD + "Message-ID: <poison@x>\r\n\r\nunreadable\r\n"
    imap_server.append(poison)
    imap_server.append(GOOD)
    report = Pulse(mail_relay, owner="test").run(poll=True)
    assert report.errors == []
    assert [m.body for m in inbound(mail_relay)] == ["Thursday works."]
    (kept,) = rejected(mail_relay)
    assert kept.sender == ALICE and kept.provider_message_id == "<poison@x>"
    assert "RecursionError" in kept.error and "Message-ID: <poison@x>" in kept.body
    listed = cli("inbox", "--kind", "rejected", "--json")
    assert listed.exit_code == 0, listed.stderr
    assert kept.error in listed.stdout


def test_an_item_the_database_refuses_is_kept_aside_and_the_rest_stored(
    mail_relay, imap_server, monkeypatch
):
    """The careful path: a batch that fails for its data is stored item by item."""
    from relay.engine.inbound import ingest as inbound_module

    real = inbound_module.store_arrival

    def refusing(session: Any, arrival: Any, now: Any, **kw: Any) -> Any:
        if arrival.provider_message_id == "<refused@x>":
            raise DataError("INSERT", {}, ValueError("value the database refuses"))
        return real(session, arrival, now, **kw)

    monkeypatch.setattr(inbound_module, "store_arrival", refusing)
    imap_server.append(HEAD + "Message-ID: <refused@x>\r\n\r\nrefused\r\n")
    imap_server.append(GOOD)
    report = Pulse(mail_relay, owner="test").run(poll=True)
    assert report.errors == []
    assert [m.body for m in inbound(mail_relay)] == ["Thursday works."]
    (kept,) = rejected(mail_relay)
    assert kept.provider_message_id == "<refused@x>" and "could not be stored" in kept.error
    assert "value the database refuses" in kept.error
    again = Pulse(mail_relay, owner="test").run(poll=True)
    assert again.errors == [] and len(rejected(mail_relay)) == 1
