"""Auto-reply detection, return dates and bounce parsing on hand-written real-world samples."""

from __future__ import annotations

from datetime import UTC, datetime
from email import message_from_string
from email.policy import compat32

import pytest

from relay.channels.mail.autoreply import is_auto_reply, return_date
from relay.channels.mail.bounces import parse_bounce

RECEIVED = datetime(2026, 3, 3, 9, 0, tzinfo=UTC)


def parsed(text: str):
    return message_from_string(text.lstrip(), policy=compat32)


def headers(**fields: str) -> str:
    base = {"From": "ann@example.com", "To": "sales@example.org", "Subject": "Re: Delivery"}
    base.update({k.replace("_", "-"): v for k, v in fields.items()})
    return "".join(f"{k}: {v}\n" for k, v in base.items()) + "\nbody\n"


@pytest.mark.parametrize(
    "fields",
    [
        {"Auto_Submitted": "auto-replied"},
        {"Auto_Submitted": "auto-generated"},
        {"X_Autoreply": "yes"},
        {"X_Autorespond": "Out of office"},
        {"Precedence": "auto_reply"},
        {"Precedence": "bulk"},
        {"Precedence": "junk"},
        {"Subject": "Automatic reply: Re: Delivery"},
        {"Subject": "Out of Office: Delivery"},
        {"Subject": "Abwesenheitsnotiz: Re: Lieferung"},
        {"Subject": "Réponse automatique : Livraison"},
        {"Subject": "Respuesta automática: Entrega"},
        {"Subject": "Fuori sede"},
        {"Subject": "Automatisch antwoord: Levering"},
    ],
)
def test_auto_replies_are_recognised(fields):
    assert is_auto_reply(parsed(headers(**fields)))


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"Auto_Submitted": "no"},
        {"Precedence": "list"},
        {"Subject": "Re: Out of stock items"},
        {"Subject": "Re: About automatic replies in your product"},
        # a person answering an auto-reply, or writing about an absence (blind set)
        {"Subject": "AW: Automatische Antwort: Lieferung"},
        {"Subject": "RE: Automatic reply: Quick question"},
        {"Subject": "Re: Out of Office AutoReply: Meeting next week"},
        {"Subject": "Re: Out of office"},
    ],
)
def test_people_are_not_auto_replies(fields):
    assert not is_auto_reply(parsed(headers(**fields)))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I am out of the office and will be back on 17 March.", "2026-03-17"),
        ("I'm away until March 16th, 2026 with limited access to email.", "2026-03-17"),
        ("Ich bin bis zum 16.03.2026 nicht im Büro.", "2026-03-17"),
        ("Je serai de retour le 17 mars.", "2026-03-17"),
        ("Estaré fuera hasta el 16 de marzo.", "2026-03-17"),
        ("Returning 2026-03-16, urgent matters to bob@example.com.", "2026-03-16"),
        ("Back in the office on 03/17.", "2026-03-17"),
        ("I'm back on 2 January.", "2027-01-02"),  # no year: the next 2 January
        ("I am away with no return date.", None),
        ("Back on 1 March.", "2027-03-01"),  # already past this year: next year's
        ("Back on 2024-01-05.", None),  # in the past
    ],
)
def test_return_dates(text, expected):
    found = return_date(text, RECEIVED)
    assert (found.date().isoformat() if found else None) == expected


DSN = """
From: Mail Delivery System <MAILER-DAEMON@mx.example.com>
To: sales@example.org
Subject: Undelivered Mail Returned to Sender
Auto-Submitted: auto-replied
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="B"

--B
Content-Type: text/plain

This is the mail system at host mx.example.com. I'm sorry to have to inform you
that your message could not be delivered.

--B
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.com
Arrival-Date: Tue, 3 Mar 2026 09:00:00 +0000

Final-Recipient: rfc822; nobody@example.com
Original-Recipient: rfc822;nobody@example.com
Action: failed
Status: 5.1.1
Diagnostic-Code: smtp; 550 5.1.1 <nobody@example.com>: Recipient address
    rejected: User unknown in local recipient table

--B
Content-Type: text/rfc822-headers

From: Sales <sales@example.org>
To: nobody@example.com
Subject: Delivery of order 1042
Message-ID: <msg-7-abc@relay>

--B--
"""

DSN_SOFT = (
    DSN.replace("Status: 5.1.1", "Status: 4.2.2")
    .replace("550 5.1.1", "452 4.2.2")
    .replace(
        "Recipient address\n    rejected: User unknown in local recipient table", "Mailbox full"
    )
)
DSN_DELAYED = DSN.replace("Action: failed", "Action: delayed").replace("5.1.1", "4.4.1")
DSN_RFC822 = DSN.replace("text/rfc822-headers", "message/rfc822").replace(
    "Message-ID: <msg-7-abc@relay>\n", "Message-ID: <msg-7-abc@relay>\n\nHello\n"
)

QMAIL = """
From: MAILER-DAEMON@mail.example.net
To: sales@example.org
Subject: failure notice

Hi. This is the qmail-send program at mail.example.net.
I'm afraid I wasn't able to deliver your message to the following addresses.
This is a permanent error; I've given up. Sorry it didn't work out.

<nobody@example.net>:
Sorry, no mailbox here by that name. (#5.1.1)

--- Below this line is a copy of the message.

Return-Path: <sales@example.org>
From: Sales <sales@example.org>
To: nobody@example.net
Subject: Delivery of order 1042
Message-ID: <msg-8-def@relay>

Hello
"""

EXCHANGE = """
From: postmaster@corp.example.com
To: sales@example.org
Subject: Undeliverable: Delivery of order 1042
Content-Type: multipart/mixed; boundary="X"

--X
Content-Type: text/plain

Delivery has failed to these recipients or groups:
bob@corp.example.com
The mailbox is full. Remote Server returned '452 4.2.2 Mailbox full'

--X
Content-Type: message/rfc822

From: Sales <sales@example.org>
To: bob@corp.example.com
Subject: Delivery of order 1042
Message-ID: <msg-9-ghi@relay>

Hello
--X--
"""


def test_a_standard_dsn_is_a_hard_bounce_of_the_original_message():
    bounce = parse_bounce(parsed(DSN))
    assert bounce is not None
    assert bounce.original_message_id == "<msg-7-abc@relay>"
    assert bounce.permanent and not bounce.delayed
    assert "5.1.1" in bounce.error and "nobody@example.com" in bounce.error
    assert "User unknown" in bounce.error


def test_a_dsn_with_the_whole_message_attached():
    bounce = parse_bounce(parsed(DSN_RFC822))
    assert bounce is not None and bounce.original_message_id == "<msg-7-abc@relay>"


def test_a_4xx_failure_is_a_soft_bounce():
    bounce = parse_bounce(parsed(DSN_SOFT))
    assert bounce is not None and not bounce.permanent and not bounce.delayed


def test_a_delay_warning_is_not_a_failure():
    bounce = parse_bounce(parsed(DSN_DELAYED))
    assert bounce is not None and bounce.delayed and not bounce.delivered


def test_a_success_report_is_a_delivery():
    success = DSN.replace("Action: failed", "Action: delivered").replace("5.1.1", "2.0.0")
    bounce = parse_bounce(parsed(success))
    assert bounce is not None and bounce.delivered and not bounce.permanent


def test_qmail_failure_notice():
    bounce = parse_bounce(parsed(QMAIL))
    assert bounce is not None
    assert bounce.original_message_id == "<msg-8-def@relay>"
    assert bounce.permanent


def test_exchange_undeliverable_with_a_4xx_is_soft():
    bounce = parse_bounce(parsed(EXCHANGE))
    assert bounce is not None
    assert bounce.original_message_id == "<msg-9-ghi@relay>"
    assert not bounce.permanent
    assert "4.2.2" in bounce.error


def test_an_ordinary_reply_is_not_a_bounce():
    assert parse_bounce(parsed(headers())) is None
    about = headers(Subject="Re: the delivery failed yesterday, can you resend?")
    assert parse_bounce(parsed(about)) is None
