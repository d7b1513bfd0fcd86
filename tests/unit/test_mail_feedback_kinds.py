"""Reports that reach the reply mailbox but ask nothing of a contact (issue 26): a
DMARC/SPF/DKIM failure report (ARF ``Feedback-Type: auth-failure``, RFC 6591), a "not
spam" report and a DMARC aggregate report (RFC 7489) neither opt anyone out nor reach
the agent; an abuse report still opts its recipient out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from relay.channels.mail.parse import Mailbox, parse_mail
from relay.channels.mail.reading import MailKind, describe, read_mail

ARRIVED = datetime(2026, 3, 3, 9, 0, tzinfo=UTC)
OURS = Mailbox("sales@ours.example", "sales+unsubscribe@ours.example", timedelta(days=7))


def _feedback(kind: str) -> bytes:
    return f"""From: reports@receiver.example
To: sales@ours.example
Subject: Report for ours.example
MIME-Version: 1.0
Content-Type: multipart/report; report-type=feedback-report; boundary="F"

--F
Content-Type: text/plain

An automatic report.

--F
Content-Type: message/feedback-report

Feedback-Type: {kind}
User-Agent: Reporter/2.0
Version: 1
Original-Mail-From: <sales@ours.example>
Original-Rcpt-To: <ana@b.example>

--F--
""".encode()


@pytest.mark.parametrize(("kind", "opts_out"), [
    ("abuse", True), ("fraud", True), ("auth-failure", False), ("not-spam", False),
])
def test_which_feedback_opts_out(kind: str, opts_out: bool) -> None:
    reading = read_mail(_feedback(kind))
    assert reading.kind is MailKind.COMPLAINT and reading.opt_out is opts_out
    found = parse_mail(_feedback(kind), ARRIVED, OURS)
    assert (found is not None) is opts_out


AGGREGATE = b"""From: noreply-dmarc-support@receiver.example
To: dmarc@ours.example
Subject: Report domain: ours.example Submitter: receiver.example Report-ID: 123
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="M"

--M
Content-Type: text/plain

--M
Content-Type: application/zip; name="receiver.example!ours.example!1669507200!1669593599.zip"
Content-Disposition: attachment;
  filename="receiver.example!ours.example!1669507200!1669593599.zip"
Content-Transfer-Encoding: base64

UEsFBgAAAAAAAAAAAAAAAAAAAAAAAA==
--M--
"""


def test_a_dmarc_aggregate_report_is_a_report_about_no_one() -> None:
    got = describe(read_mail(AGGREGATE), "aggregate.eml")
    assert got["kind"] == "delivery_report" and got["opt_out"] is False and got["bounce"] is None
    assert parse_mail(AGGREGATE, ARRIVED, OURS) is None


def test_an_attachment_named_like_one_in_a_reply_is_what_decides() -> None:
    reply = AGGREGATE.replace(b"!1669507200!1669593599.zip", b"-report.zip")
    assert read_mail(reply).kind is not MailKind.DELIVERY_REPORT
