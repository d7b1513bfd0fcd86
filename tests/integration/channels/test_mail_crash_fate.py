"""A crash between handing a mail to the SMTP server and recording it: with
``imap_sent_mailbox`` the sent folder (a real IMAP server on loopback) is asked
by ``Message-ID`` before anything is sent again; without it the mail's fate is
unknown and waits for the operator."""

from __future__ import annotations

import imaplib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from relay.channels.email import EmailChannel
from relay.engine.outbox.dispatcher import SEND_LEASE
from relay.runner.pulse import Pulse
from relay.store.models import Message
from relay.testing import FakeClock

ALICE = "alice@example.com"


class ProcessDied(BaseException):
    """Stands in for the process being killed: no ``except Exception`` catches it."""


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime.now(UTC).replace(microsecond=0))


def mail_relay(
    make_relay: Callable[..., Any], db_url: str, clock: Any, smtp: Any, imap: Any, **extra: Any
) -> Any:
    settings = {"type": "email", "host": smtp.host, "port": smtp.port, "from": "sales@example.org"}
    settings |= imap.settings(**extra)
    overrides = {f"channels.email.{key}": value for key, value in settings.items()}
    return make_relay(db_url, clock, **overrides, **{"defaults.channel": "email"})


@pytest.fixture
def dies(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """``dies("after")``: the next mail is handed to the SMTP server, then the
    process dies before recording it; ``dies("before")``: before SMTP is called."""
    real = EmailChannel.send
    when: list[str] = []

    def send(self: EmailChannel, message: Any) -> str:
        if when == ["before"]:
            when.clear()
            raise ProcessDied
        message_id = real(self, message)
        if when == ["after"]:
            when.clear()
            raise ProcessDied
        return message_id

    monkeypatch.setattr(EmailChannel, "send", send)
    yield when.append


def killed_mid_send(relay: Any, clock: Any) -> None:
    relay.start(ALICE, "Confirm the delivery", ["Which day suits you?"])
    with pytest.raises(ProcessDied):
        Pulse(relay, "dead").run()
    assert [m.status for m in outbound(relay)] == ["sending"]
    clock.advance(SEND_LEASE + timedelta(seconds=1))


def file_as_sent(imap_server: Any, raw: bytes) -> None:
    """What Gmail or Microsoft 365 do with what they relay: a copy in Sent."""
    client = imaplib.IMAP4(imap_server.host, imap_server.port, timeout=10)
    try:
        from imap_server import PASSWORD, USER

        client.login(USER, PASSWORD)
        client.create("Sent")
    finally:
        client.logout()
    imap_server.append(raw, mailbox="Sent")


def outbound(relay: Any) -> list[Message]:
    with relay.store.transaction() as session:
        query = select(Message).where(Message.direction == "outbound").order_by(Message.id)
        return list(session.scalars(query))


def test_a_mail_found_in_the_sent_folder_is_recorded_not_sent_again(
    make_relay, db_url, clock, smtp_server, imap_server, dies
) -> None:
    relay = mail_relay(
        make_relay, db_url, clock, smtp_server, imap_server, imap_sent_mailbox="Sent"
    )
    dies("after")
    killed_mid_send(relay, clock)
    [mail] = smtp_server.messages
    file_as_sent(imap_server, mail.content)
    Pulse(relay, "new").run()
    assert len(smtp_server.messages) == 1
    [message] = outbound(relay)
    assert message.status == "sent"
    assert message.provider_message_id and message.provider_message_id.encode() in mail.content


def test_a_mail_not_in_the_sent_folder_is_sent_once(
    make_relay, db_url, clock, smtp_server, imap_server, dies
) -> None:
    relay = mail_relay(
        make_relay, db_url, clock, smtp_server, imap_server, imap_sent_mailbox="Sent"
    )
    file_as_sent(imap_server, b"From: a@example.org\nMessage-ID: <other@relay>\n\nan older one\n")
    dies("before")
    killed_mid_send(relay, clock)
    Pulse(relay, "new").run()
    assert len(smtp_server.messages) == 1
    assert [m.status for m in outbound(relay)] == ["sent"]


def test_without_a_sent_folder_the_mail_waits_with_its_fate_unknown(
    make_relay, db_url, clock, smtp_server, imap_server, dies
) -> None:
    relay = mail_relay(make_relay, db_url, clock, smtp_server, imap_server)
    dies("after")
    killed_mid_send(relay, clock)
    Pulse(relay, "new").run()
    [message] = outbound(relay)
    assert message.status == "unknown"
    assert "imap_sent_mailbox" in (message.last_error or "")
    assert len(smtp_server.messages) == 1
