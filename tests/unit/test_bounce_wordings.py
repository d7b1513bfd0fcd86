"""Bounce and auto-reply wordings found while measuring relay on corpora it had not seen
(issue 26), written here in our own words: each line is a kind of mail real servers and
people send.

The corpus itself (Mail::DeliveryStatus::BounceParser's test mails) is not committed;
docs/channels.md "## Accuracy" gives its figures and how to rerun them."""

from __future__ import annotations

import pytest

from relay.channels.mail.reading import MailKind, read_mail
from relay.core.bounce_reasons import BounceReason, classify

R = BounceReason


@pytest.mark.parametrize(
    ("status", "text", "expected"),
    [
        # a status about the address (X.1.0) with nothing but "rejected"
        ("5.1.0", "550 #5.1.0 Address rejected.", R.USER_UNKNOWN),
        # ... but our sender rejected under the same code is about us
        ("5.1.0", "550 5.1.0 <bounces@ours.example> sender rejected", R.POLICY),
        ("5.0.0", "550 ** No mail box available for this user **", R.USER_UNKNOWN),
        ("5.0.0", "550 BAD_RECIPIENT - see https://mail.example.org/why", R.USER_UNKNOWN),
        (None, "DNS lookup failure: host mx.nowhere.example not found", R.HOST_UNKNOWN),
        (None, "an MX or SRV record indicated no SMTP service", R.HOST_UNKNOWN),
        # a size limit under a recipient code is still a size limit
        ("5.1.1", "550 RCPT TO:<a@b.example> max message size exceeded", R.TOO_BIG),
        # a domain whose DNS answers badly can be repaired: not a dead address
        ("5.4.4", "Name service error for name=b.example type=MX: Malformed name server reply",
         R.EXPIRED),
        ("5.0.0", "551 <a@b.example> is a deactivated mailbox", R.SUSPENDED),
    ],
)
def test_wordings(status: str | None, text: str, expected: BounceReason) -> None:
    assert classify(status, text) is expected


def test_a_null_sender_saying_the_user_is_not_valid_is_a_bounce_not_an_auto_reply() -> None:
    raw = (
        b"Return-Path: <>\nFrom: <>\nTo: bounces@ours.example\n"
        b"Auto-Submitted: auto-replied\nDate: Tue, 29 Dec 2009 12:12:54 +0000\n\n"
        b"You sent mail to ana@b.example. That's not a valid user here.\n"
    )
    reading = read_mail(raw)
    assert reading.kind is MailKind.BOUNCE
    assert reading.bounce is not None and reading.bounce.permanent


def test_an_out_of_office_from_a_null_sender_stays_an_auto_reply() -> None:
    raw = (
        b"Return-Path: <>\nFrom: Ana <ana@b.example>\nTo: sam@ours.example\n"
        b"Auto-Submitted: auto-replied\nSubject: Out of office\n"
        b"Date: Tue, 29 Dec 2009 12:12:54 +0000\n\n"
        b"I am away until 4 January and will read your mail when I am back.\n"
    )
    assert read_mail(raw).kind is MailKind.AUTO_REPLY


def test_a_report_whose_mime_boundary_never_occurs_is_read_as_text() -> None:
    raw = (
        b"Return-Path: <>\nFrom: MAILER-DAEMON@mx.ours.example (Mail Delivery System)\n"
        b"Subject: Undelivered Mail Returned to Sender\nTo: bounces@ours.example\n"
        b"Content-Type: multipart/report; report-type=delivery-status; boundary=\"AAA\"\n\n"
        b"--BBB\nContent-Type: text/plain\n\n"
        b"I'm sorry to have to inform you that your message could not\n"
        b"be delivered to one or more recipients. It's attached below.\n\n"
        b"<ana@b.example>: host mx.b.example said: 550 5.1.1 <ana@b.example>:\n"
        b"    Recipient address rejected: User unknown (in reply to RCPT TO command)\n"
        b"--BBB--\n"
    )
    bounce = read_mail(raw).bounce
    assert bounce is not None and bounce.permanent
    assert bounce.recipients == ("ana@b.example",)


@pytest.mark.parametrize(
    "subject", ["Ausencia de la oficina", "Ausente de la oficina: Oferta", "Assente dall'ufficio"]
)
def test_out_of_office_subjects_named_by_a_longer_phrase(subject: str) -> None:
    raw = f"From: a@b.example\nTo: s@ours.example\nSubject: {subject}\n\nGracias.\n".encode()
    assert read_mail(raw).kind is MailKind.AUTO_REPLY


def test_a_subject_that_only_starts_like_one_is_a_reply() -> None:
    raw = b"From: a@b.example\nTo: s@ours.example\nSubject: Re: Ausencia de lluvia\n\nSi.\n"
    assert read_mail(raw).kind is MailKind.REPLY


def test_an_answer_that_names_no_reason_is_read_with_the_lines_above_it() -> None:
    raw = (
        b"Return-Path: <>\nFrom: Mail Delivery Subsystem <MAILER-DAEMON@mx.b.example>\n"
        b"To: bounces@ours.example\nSubject: Returned mail: Service unavailable\n\n"
        b"   ----- The following addresses had permanent fatal errors -----\n<ana@b.example>\n\n"
        b"   ----- Transcript of session follows -----\n"
        b"mail.local: unknown user: ana\n554 <ana@b.example>... Service unavailable\n"
    )
    bounce = read_mail(raw).bounce
    assert bounce is not None and bounce.reason is R.USER_UNKNOWN and bounce.permanent


def test_a_local_program_failure_stays_a_mailer_error() -> None:
    assert classify("5.1.1", "x-unix; /usr/bin/procmail: exit 67 user unknown") is R.OTHER


@pytest.mark.parametrize(
    ("subject", "kind"),
    [
        # under a reply prefix, an everyday word is the thread's topic
        ("Re: Holiday - special offer", MailKind.REPLY),
        ("AW: Urlaub", MailKind.REPLY),
        ("Re: Semester", MailKind.REPLY),
        # ... while a notice's phrase still counts
        ("RE: Automatic reply: Offer", MailKind.AUTO_REPLY),
        ("Re: Abwesenheitsnotiz: Angebot", MailKind.AUTO_REPLY),
        ("Re: Away message", MailKind.AUTO_REPLY),
        # and without a prefix the word is the notice itself
        ("Holiday - back 5 January", MailKind.AUTO_REPLY),
    ],
)
def test_absence_words_in_reply_subjects(subject: str, kind: MailKind) -> None:
    raw = f"From: a@b.example\nTo: s@ours.example\nSubject: {subject}\n\nOk.\n".encode()
    assert read_mail(raw).kind is kind


def test_a_japanese_mail_error_notice_is_a_bounce() -> None:
    raw = (
        "From: no-reply@mail.carrier.example\nTo: sam@ours.example\n"
        "Subject: メールエラー通知\nMIME-Version: 1.0\n"
        'Content-Type: multipart/mixed; boundary="J"\n\n'
        "--J\nContent-Type: text/plain; charset=utf-8\n\n"
        "送信先のメールボックスが一杯のため、送信できませんでした。\n"
        "--J\nContent-Type: message/rfc822\n\n"
        "From: sam@ours.example\nTo: ana@carrier.example\nMessage-Id: <m1@relay>\n\nhello\n--J--\n"
    ).encode()
    bounce = read_mail(raw).bounce
    assert bounce is not None and bounce.reason is R.MAILBOX_FULL and not bounce.permanent
