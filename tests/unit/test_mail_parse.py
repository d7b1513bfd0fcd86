"""One raw email in, the channel contract's values out: routing headers, kinds, receipts."""

from __future__ import annotations

from datetime import UTC, datetime

from relay.channels.base import Inbound, Receipt
from relay.channels.mail.parse import Mailbox, parse_mail
from relay.core.values import DeliveryStatus, InboundKind

ARRIVED = datetime(2026, 3, 3, 9, 30, tzinfo=UTC)
OURS = Mailbox("sales@example.org", "sales+unsubscribe@example.org")

REPLY = """\
From: Alice Example <Alice@Example.com>
To: Sales <sales@example.org>
Subject: Re: Delivery of order 1042
Message-ID: <CAF=reply-1@mail.gmail.com>
In-Reply-To: <msg-2-b@relay>
References: <msg-1-a@relay> <reply-0@mail.gmail.com>
 <msg-2-b@relay>
Date: Tue, 3 Mar 2026 10:29:00 +0100
Content-Type: text/plain; charset=utf-8

Thursday works. STOP worrying, it's fine.

Alice
--\x20
Alice Example | ACME

On Mon, 2 Mar 2026 at 09:12, Sales <sales@example.org> wrote:
> Which day suits you? Reply STOP to opt out.
"""


def parse(text: str, arrived: datetime | None = ARRIVED):
    return parse_mail(text.replace("\n", "\r\n").encode(), arrived, OURS)


def test_a_reply_carries_the_new_part_the_thread_and_the_raw_mail():
    inbound = parse(REPLY)
    assert isinstance(inbound, Inbound)
    assert inbound.sender == "alice@example.com"
    assert inbound.text == "Thursday works. STOP worrying, it's fine.\n\nAlice"
    assert inbound.provider_message_id == "<CAF=reply-1@mail.gmail.com>"
    # In-Reply-To first, then References newest first, each once.
    assert inbound.references == ("<msg-2-b@relay>", "<reply-0@mail.gmail.com>", "<msg-1-a@relay>")
    assert inbound.kind == InboundKind.MESSAGE
    assert inbound.received_at == ARRIVED
    assert inbound.raw is not None and "Reply STOP to opt out" in inbound.raw
    assert inbound.resume_at is None


def test_without_an_arrival_time_the_date_header_counts():
    assert parse(REPLY, arrived=None).received_at == datetime(2026, 3, 3, 9, 29, tzinfo=UTC)


def test_html_only_mail_becomes_text():
    html = (
        "From: bob@example.com\nTo: sales@example.org\nSubject: Re: x\nMessage-ID: <h1@x>\n"
        "Content-Type: text/html; charset=utf-8\n\n"
        "<p>Morning&nbsp;is better.</p><blockquote>Morning or afternoon?</blockquote>\n"
    )
    inbound = parse(html)
    assert isinstance(inbound, Inbound)
    assert inbound.text.replace("\xa0", " ") == "Morning is better."


def test_multipart_alternative_prefers_the_plain_part():
    mail = (
        "From: bob@example.com\nTo: sales@example.org\nSubject: Re: x\nMessage-ID: <m1@x>\n"
        'MIME-Version: 1.0\nContent-Type: multipart/alternative; boundary="b"\n\n'
        "--b\nContent-Type: text/plain\n\nPlain yes.\n--b\nContent-Type: text/html\n\n"
        "<p>HTML yes.</p>\n--b--\n"
    )
    assert parse(mail).text == "Plain yes."


def test_mail_to_the_unsubscribe_address_unsubscribes():
    mail = (
        "From: carol@example.com\nTo: sales+unsubscribe@example.org\nSubject: unsubscribe\n"
        "Message-ID: <u1@example.com>\n\n"
    )
    inbound = parse(mail)
    assert isinstance(inbound, Inbound) and inbound.kind == InboundKind.UNSUBSCRIBE
    assert inbound.sender == "carol@example.com"


def test_an_out_of_office_is_an_auto_reply_with_its_return_date():
    mail = (
        "From: dan@example.com\nTo: sales@example.org\nSubject: Automatic reply: Delivery\n"
        "Auto-Submitted: auto-replied\nMessage-ID: <ooo-1@example.com>\n"
        "In-Reply-To: <msg-3-c@relay>\n\n"
        "I am out of the office until 16 March 2026 with no access to email.\n"
    )
    inbound = parse(mail)
    assert isinstance(inbound, Inbound) and inbound.kind == InboundKind.AUTO_REPLY
    assert inbound.resume_at == datetime(2026, 3, 17, tzinfo=UTC)
    assert inbound.references == ("<msg-3-c@relay>",)


def test_a_bounce_is_a_receipt_for_our_message():
    mail = (
        "From: MAILER-DAEMON@mx.example.com\nTo: sales@example.org\n"
        "Subject: Undelivered Mail Returned to Sender\nMessage-ID: <b1@mx.example.com>\n"
        "MIME-Version: 1.0\nContent-Type: multipart/report; report-type=delivery-status;"
        ' boundary="B"\n\n'
        "--B\nContent-Type: text/plain\n\nSorry.\n\n"
        "--B\nContent-Type: message/delivery-status\n\nReporting-MTA: dns; mx.example.com\n\n"
        "Final-Recipient: rfc822; nobody@example.com\nAction: failed\nStatus: 5.1.1\n"
        "Diagnostic-Code: smtp; 550 5.1.1 User unknown\n\n"
        "--B\nContent-Type: text/rfc822-headers\n\nMessage-ID: <msg-4-d@relay>\n\n--B--\n"
    )
    receipt = parse(mail)
    assert isinstance(receipt, Receipt)
    assert receipt.provider_message_id == "<msg-4-d@relay>"
    assert receipt.status == DeliveryStatus.BOUNCED
    assert receipt.permanent
    assert "5.1.1" in (receipt.error or "")
    assert receipt.at == ARRIVED


def test_a_bounce_about_an_unknown_message_is_kept_as_an_auto_reply():
    mail = (
        "From: MAILER-DAEMON@mx.example.com\nTo: sales@example.org\n"
        "Subject: failure notice\nMessage-ID: <b2@mx.example.com>\n\n"
        "Sorry, no mailbox here by that name. (#5.1.1)\n"
    )
    inbound = parse(mail)
    assert isinstance(inbound, Inbound) and inbound.kind == InboundKind.AUTO_REPLY


def test_our_own_mail_and_delay_warnings_are_not_stored():
    own = "From: sales@example.org\nTo: a@b.com\nSubject: x\nMessage-ID: <msg-1-a@relay>\n\nx\n"
    assert parse(own) is None


def test_mail_without_a_message_id_gets_a_stable_one():
    mail = "From: e@example.com\nTo: sales@example.org\nSubject: hi\n\nHello\n"
    first, second = parse(mail), parse(mail)
    assert isinstance(first, Inbound) and isinstance(second, Inbound)
    assert first.provider_message_id == second.provider_message_id
    assert first.provider_message_id.endswith("@no-message-id>")
