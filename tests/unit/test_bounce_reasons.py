"""Bounce reasons from status codes and wording (relay.core.bounce_reasons): only a dead
address is ``dead``; a specific sentence wins over a generic code and vice versa."""

from __future__ import annotations

import pytest

from relay.core.bounce_reasons import BounceReason, classify, parse_status

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
