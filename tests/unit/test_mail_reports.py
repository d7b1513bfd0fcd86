"""What becomes of complaints, delivery reports, VERP bounces and auto-replies without a
date (relay.channels.mail.parse over relay.channels.mail.reading)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.message import EmailMessage

from relay.channels.base import Inbound, Receipt
from relay.channels.mail.parse import Mailbox, parse_mail
from relay.channels.mail.reading import MailKind, read_mail
from relay.channels.mail.verp import verp_address, verp_message_id
from relay.core.values import DeliveryStatus, InboundKind

ARRIVED = datetime(2026, 3, 3, 9, 0, tzinfo=UTC)
OURS = Mailbox("sales@example.org", "sales+unsubscribe@example.org", timedelta(days=7))

ARF = """From: feedback@fbl.example.net
To: abuse@example.org
Subject: complaint about message from 192.0.2.1
Message-ID: <fbl-1@fbl.example.net>
MIME-Version: 1.0
Content-Type: multipart/report; report-type=feedback-report; boundary="B"

--B
Content-Type: text/plain

This is an email abuse report.

--B
Content-Type: message/feedback-report

Feedback-Type: abuse
User-Agent: SomeGenerator/1.0
Version: 1
Original-Mail-From: <sales@example.org>
Original-Rcpt-To: <ana@example.com>

--B
Content-Type: text/rfc822-headers

From: Sales <sales@example.org>
To: ana@example.com
Message-ID: <msg-1-a@relay>

--B--
"""


def parse(text: str) -> Inbound | Receipt | None:
    return parse_mail(text.encode(), ARRIVED, OURS)


def test_an_abuse_report_opts_the_recipient_out_and_is_no_reply() -> None:
    found = parse(ARF)
    assert isinstance(found, Inbound)
    assert found.kind is InboundKind.COMPLAINT and found.sender == "ana@example.com"
    reading = read_mail(ARF.encode())
    assert reading.kind is MailKind.COMPLAINT and reading.opt_out


def test_a_redacted_abuse_report_is_a_complaint_receipt_on_the_message() -> None:
    redacted = ARF.replace("Original-Rcpt-To: <ana@example.com>\n", "").replace(
        "To: ana@example.com", "To: redacted"
    )
    found = parse(redacted)
    assert isinstance(found, Receipt)
    assert found.provider_message_id == "<msg-1-a@relay>"
    assert found.opted_out and found.reason == "complaint"
    assert found.status is DeliveryStatus.DELIVERED


DSN = """From: MAILER-DAEMON@mx.example.com
To: sales@example.org
Subject: Delivery Status Notification
Message-ID: <d1@mx.example.com>
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="B"

--B
Content-Type: text/plain

Report.

--B
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.com

Final-Recipient: rfc822; ana@example.com
Action: ACTION
Status: STATUS

--B
Content-Type: text/rfc822-headers

Message-ID: <msg-2-b@relay>

--B--
"""


def test_delivery_and_delay_reports_are_receipts_not_failures() -> None:
    delivered = parse(DSN.replace("ACTION", "delivered").replace("STATUS", "2.0.0"))
    delayed = parse(DSN.replace("ACTION", "delayed").replace("STATUS", "4.4.7"))
    assert isinstance(delivered, Receipt) and delivered.status is DeliveryStatus.DELIVERED
    assert isinstance(delayed, Receipt) and delayed.status is DeliveryStatus.DELAYED
    assert not delayed.permanent and delayed.reason is None


def test_a_failed_dsn_carries_its_reason_and_only_a_dead_address_is_permanent() -> None:
    full = parse(DSN.replace("ACTION", "failed").replace("STATUS", "5.2.2"))
    dead = parse(DSN.replace("ACTION", "failed").replace("STATUS", "5.1.1"))
    assert isinstance(full, Receipt) and full.reason == "mailbox_full" and not full.permanent
    assert isinstance(dead, Receipt) and dead.reason == "user_unknown" and dead.permanent
    assert full.status is DeliveryStatus.BOUNCED


def test_verp_return_paths_name_the_message() -> None:
    path = verp_address("bounces@example.org", "<msg-7-k+x=y@relay>")
    assert path == "bounces+msg-7-k+x=y@example.org"
    mail = EmailMessage()
    mail["To"] = path
    assert verp_message_id(mail) == "<msg-7-k+x=y@relay>"


def test_a_bounce_that_quotes_nothing_is_routed_by_its_verp_address() -> None:
    bare = (
        "From: MAILER-DAEMON@mx.example.com\n"
        f"To: {verp_address('bounces@example.org', '<msg-9-z@relay>')}\n"
        "Subject: failure notice\nMessage-ID: <q1@mx.example.com>\n\n"
        "Hi. This is the qmail-send program at mx.example.com.\n"
        "I'm afraid I wasn't able to deliver your message to the following addresses.\n"
        "This is a permanent error; I've given up. Sorry it didn't work out.\n\n"
        "<ana@example.com>:\nSorry, no mailbox here by that name. (#5.1.1)\n"
    )
    found = parse(bare)
    assert isinstance(found, Receipt)
    assert found.provider_message_id == "<msg-9-z@relay>" and found.permanent
    reading = read_mail(bare.encode())
    assert reading.bounce is not None and reading.bounce.recipients == ("ana@example.com",)


def test_an_out_of_office_without_a_date_pauses_for_the_default() -> None:
    mail = (
        "From: dan@example.com\nTo: sales@example.org\nSubject: Out of Office\n"
        "X-Auto-Response-Suppress: All\nMessage-ID: <ooo-2@example.com>\n\n"
        "I am away with limited access to email.\n"
    )
    found = parse(mail)
    assert isinstance(found, Inbound) and found.kind is InboundKind.AUTO_REPLY
    assert found.resume_at == ARRIVED + timedelta(days=7)
    never = parse_mail(mail.encode(), ARRIVED, Mailbox("sales@example.org", "u@example.org"))
    assert isinstance(never, Inbound) and never.resume_at is None


def test_an_automatic_unsubscribe_mail_opts_out() -> None:
    mail = (
        "From: ana@example.com\nTo: sales@example.org\nSubject: unsubscribe\n"
        "Auto-Submitted: auto-replied\nMessage-ID: <u2@example.com>\n\n"
    )
    found = parse(mail)
    assert isinstance(found, Inbound) and found.kind is InboundKind.UNSUBSCRIBE


def test_return_dates_follow_the_contacts_region() -> None:
    from relay.channels.mail.autoreply import return_date

    assert return_date("Back on 4/5.", ARRIVED, region="US") == datetime(2026, 4, 5, tzinfo=UTC)
    assert return_date("Back on 4/5.", ARRIVED, region="GB") == datetime(2026, 5, 4, tzinfo=UTC)
    assert return_date("Zurück am 4.5.", ARRIVED, language="de") == datetime(2026, 5, 4, tzinfo=UTC)
