"""Bounce reasons from status codes and wording (relay.core.bounce_reasons): only a dead
address is ``dead``; a specific sentence wins over a generic code and vice versa."""

from __future__ import annotations

import pytest

from relay.core.bounce_reasons import BounceReason, classify, parse_status
from relay.core.smtp_steps import refused_at

R = BounceReason


@pytest.mark.parametrize(
    ("status", "text", "expected"),
    [
        ("5.1.1", "550 5.1.1 <a@x.org>: Recipient address rejected: User unknown",
         R.USER_UNKNOWN),
        (None, "550 Unknown user a@x.org", R.USER_UNKNOWN),
        ("5.0.0", "554 delivery error: dd This user doesn't have a yahoo.com account",
         R.USER_UNKNOWN),
        ("5.1.6", "551 not our customer", R.USER_UNKNOWN),
        ("5.1.2", "Host or domain name not found. Name service error for name=x.example",
         R.HOST_UNKNOWN),
        ("5.1.10", "Recipient domain has a null MX", R.HOST_UNKNOWN),
        ("4.4.1", "Host or domain name not found (DNS lookup timed out)", R.EXPIRED),
        ("5.2.2", "552 5.2.2 Mailbox full", R.MAILBOX_FULL),
        ("5.1.1", "550 5.1.1 mailbox quota exceeded", R.MAILBOX_FULL),
        ("5.3.4", "552 5.3.4 Message size exceeds fixed limit", R.TOO_BIG),
        ("5.7.1", "554 5.7.1 Service unavailable; blocked using zen.spamhaus.org", R.SPAM),
        ("5.7.1", "550 5.7.1 Relaying denied", R.POLICY),
        ("5.7.26", "Unauthenticated email is not accepted due to domain's DMARC policy",
         R.AUTHENTICATION),
        ("4.7.28", "421 4.7.28 unusual rate of unsolicited mail", R.RATE_LIMITED),
        ("4.2.1", "452 4.2.1 too many messages, try again later", R.RATE_LIMITED),
        ("5.2.1", "550 5.2.1 The email account that you tried to reach is disabled", R.SUSPENDED),
        ("4.4.7", "Delivery time expired: retry timeout exceeded", R.EXPIRED),
        ("5.1.8", "553 5.1.8 Domain of sender address does not exist", R.POLICY),
        ("5.0.0", "550 Unknown user a@x.org (in reply to end of DATA command)", R.POLICY),
        ("5.0.0", "something went wrong", R.OTHER),
    ],
)
def test_reasons(status: str | None, text: str, expected: BounceReason) -> None:
    assert classify(status, text) is expected


def test_only_user_and_host_unknown_are_dead() -> None:
    assert {r for r in BounceReason if r.dead} == {R.USER_UNKNOWN, R.HOST_UNKNOWN}


@pytest.mark.parametrize(
    ("text", "expected"),
    [("Status: 5.1.1", "5.1.1"), ("550-5.7.26 x", "5.7.26"), ("v1.2.3.4", None), ("", None)],
)
def test_status_codes(text: str, expected: str | None) -> None:
    assert parse_status(text) == expected


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("550 5.1.1 <a@x.org>: User unknown (in reply to RCPT TO command)", "RCPT"),
        ("550 Unknown user a@x.org (in reply to end of DATA command)", "DATA"),
        ("SMTP error from remote mail server after RCPT TO:<a@x.org>: 550 no such user", "RCPT"),
        ("SMTP error from remote mail server after end of data: 553 x does not exist", "DATA"),
        ("SMTP error from remote mail server after MAIL FROM:<b@y.org>: 553 sender", "MAIL"),
        ("... while talking to mx.x.org.:\n>>> DATA\n<<< 550 Unknown user a@x.org\n"
         "554 5.0.0 Service unavailable\n", "DATA"),
        # pipelining: the first answer after DATA is the RCPT TO's, the second the DATA's
        (">>> MAIL From:<b@y.org>\n<<< 250 ok\n>>> DATA\n<<< 551 not our user\n"
         "550 5.1.1 <a@x.org>... User unknown\n<<< 503 need RCPT command [data]\n", "RCPT"),
        ("Connected to 192.0.2.1 but my name was rejected.\nRemote host said: 501", "HELO"),
        ("most progress was RCPT TO response; remote host said: 550 Unknown user", "RCPT"),
        ("550 5.2.1 <a@x.org>: Recipient address rejected: User unknown", "RCPT"),
        ("550 5.2.1 <a@x.org>... User Unknown [RCPT_TO]", "RCPT"),
        ("550 5.1.1 <a@x.org>... User Unknown", None),
    ],
)
def test_the_smtp_step_a_server_refused(text: str, command: str | None) -> None:
    assert refused_at(text) == command


@pytest.mark.parametrize(
    ("status", "text", "command", "expected"),
    [
        # after DATA the server had accepted the address: a filter, unless the code says 5.1.x
        ("5.2.0", "550 Unknown user a@x.org", "DATA", R.POLICY),
        ("5.1.1", "550 5.1.1 <a@x.org>... User unknown", "DATA", R.USER_UNKNOWN),
        ("5.0.0", "550 Unknown user a@x.org", "RCPT", R.USER_UNKNOWN),
        ("5.0.0", "501 5.0.0 Invalid domain name", "HELO", R.POLICY),
        # a mailbox/system/security code against "user unknown": dead only at RCPT TO
        ("5.2.1", "550 5.2.1 <a@x.org>... User Unknown", None, R.SUSPENDED),
        ("5.2.1", "550 5.2.1 <a@x.org>... User Unknown", "RCPT", R.USER_UNKNOWN),
        ("5.3.0", "553 5.3.0 <a@x.org>... No such user here", "RCPT", R.USER_UNKNOWN),
        ("5.2.0", "550 Unknown user a@x.org", None, R.OTHER),
        # no recipient in the answer: said of the whole message
        ("5.0.0", "smtp; 550 : User unknown", None, R.POLICY),
        ("5.0.0", "smtp; 550 <a@ezweb.ne.jp>: User unknown", None, R.USER_UNKNOWN),
        # a local delivery program failed
        ("5.1.1", 'x-unix; procmail: Couldn\'t create "/var/spool/mail/a" No such user', None,
         R.OTHER),
        # a guess, a recipient's choice
        (None, "die Gruppe (x) möglicherweise nicht vorhanden ist bzw. Sie nicht die "
         "erforderlichen Berechtigungen haben", None, R.POLICY),
        ("5.1.1", "550 5.1.1 RCP-P2 Refused due to recipient preferences", None, R.POLICY),
        ("5.1.1", "Google tried to deliver your message, but it was rejected by the recipient "
         "domain. 550 5.1.1 The email account that you tried to reach does not exist", None,
         R.USER_UNKNOWN),
        # Amazon SES's own description of the code is not what the server said
        ("5.1.0", "smtp; 5.1.0 - Unknown address error 550-'5.7.1 <a@x.org>... Access denied' "
         "(delivery attempts: 0)", None, R.POLICY),
        # Microsoft 365 refuses an address not in its directory with 5.4.1 "Access denied"
        ("5.4.1", "550 5.4.1 <a@x.org>: Recipient address rejected: Access denied", "RCPT",
         R.USER_UNKNOWN),
        ("5.3.2", "521 5.3.2 System not accepting network messages", None, R.HOST_UNKNOWN),
        ("4.3.2", "421 4.3.2 System not accepting network messages", None, R.RATE_LIMITED),
        (None, "Your message wasn't delivered because the address couldn't be found.", None,
         R.USER_UNKNOWN),
        (None, "nyan@haineko.org Unrouteable address", None, R.HOST_UNKNOWN),
        # Yahoo states the account is missing, after DATA: a finding, not a filter's answer
        ("5.0.0", "554 delivery error: dd This user doesn't have a yahoo.com account "
         "(a@yahoo.com) [0] - mta1061.mail.ne1.yahoo.com", "DATA", R.USER_UNKNOWN),
        # Microsoft 365 answers 5.1.10 (RFC 7505's null MX) for a missing recipient
        ("5.1.10", "550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP "
         "address lookup", None, R.USER_UNKNOWN),
        ("4.2.1", "450-4.2.1 The user you are trying to contact is receiving mail at a rate "
         "that prevents additional messages from being delivered", None, R.RATE_LIMITED),
    ],
)
def test_a_dead_reading_stands_only_when_nothing_contradicts_it(
    status: str | None, text: str, command: str | None, expected: BounceReason
) -> None:
    assert classify(status, text, command=command) is expected
