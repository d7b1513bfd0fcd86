"""``relay doctor --email`` (issue 30, item 5) against a resolver the test controls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from relay import schemas

GOOD = {
    "example.com": ["v=spf1 include:_spf.mail.example.net -all", "google-site-verification=x"],
    "s1._domainkey.example.com": ["v=DKIM1; k=rsa; p=MIIBIjANBgkq"],
    "_dmarc.example.com": ["v=DMARC1; p=quarantine; rua=mailto:d@example.com"],
}
CHANNEL = {
    "type": "email", "host": "smtp.example.net", "from": "team@example.com",
    "dkim_selector": "s1", "unsubscribe_url": "https://relay.example.com",
}  # fmt: skip


def _relay(make_relay: Callable[..., Any], db_url: str, **settings: Any) -> Any:
    channel = {**CHANNEL, **settings}
    return make_relay(db_url, **{f"channels.mail.{k}": v for k, v in channel.items() if v})


def _results(relay: Any, records: dict[str, list[str]]) -> dict[str, tuple[bool, str]]:
    looked: list[str] = []

    def txt(name: str) -> list[str]:
        looked.append(name)
        return records.get(name, [])

    from relay.api import check_email

    checks = check_email(relay, txt)
    assert looked  # the test's resolver, never the network
    document = {"schema_version": 1, "ok": all(c.ok for c in checks)}
    schemas.validator("doctor-email").validate(
        {**document, "checks": [c.to_json() for c in checks]}
    )
    return {c.check: (c.ok, c.detail) for c in checks}


def test_a_domain_set_up_well_passes(make_relay: Callable[..., Any], db_url: str) -> None:
    results = _results(_relay(make_relay, db_url), GOOD)
    assert all(ok for ok, _ in results.values()), results
    assert results["alignment"][1] == "DKIM signs as example.com, the From domain"


@pytest.mark.parametrize(
    ("records", "settings", "check", "detail"),
    [
        ({**GOOD, "example.com": []}, {}, "spf", "no SPF record at example.com"),
        ({**GOOD, "example.com": ["v=spf1 a", "v=spf1 mx"]}, {}, "spf", "2 SPF records"),
        ({**GOOD, "example.com": ["v=spf1 +all"]}, {}, "spf", "ends in +all"),
        (GOOD, {"dkim_selector": None}, "dkim", "set dkim_selector"),
        ({**GOOD, "s1._domainkey.example.com": ["v=DKIM1; p="]}, {}, "dkim", "revoked"),
        ({**GOOD, "_dmarc.example.com": []}, {}, "dmarc", "no DMARC record"),
        ({**GOOD, "_dmarc.example.com": ["v=DMARC1; rua=mailto:x"]}, {}, "dmarc", "no valid p="),
        (GOOD, {"unsubscribe_url": None}, "unsubscribe", "set unsubscribe_url"),
        (GOOD, {"unsubscribe_url": "http://x.example"}, "unsubscribe", "is not https"),
        # No DKIM, and the VERP return path on another domain: SPF cannot align.
        (
            {**GOOD, "bounce.example.org": ["v=spf1 -all"]},
            {"dkim_selector": None, "bounce_address": "b@bounce.example.org"},
            "alignment", "not aligned (relaxed)",
        ),
    ],
)  # fmt: skip
def test_each_problem_is_named(
    make_relay: Callable[..., Any],
    db_url: str,
    records: dict[str, list[str]],
    settings: dict[str, Any],
    check: str,
    detail: str,
) -> None:
    ok, said = _results(_relay(make_relay, db_url, **settings), records)[check]
    assert not ok and detail in said, said


def test_spf_alone_aligns_in_relaxed_mode(make_relay: Callable[..., Any], db_url: str) -> None:
    relay = _relay(make_relay, db_url, dkim_selector=None, bounce_address="b@mail.example.com")
    records = {**GOOD, "mail.example.com": ["v=spf1 -all"]}
    assert _results(relay, records)["alignment"][0]
    strict = {**records, "_dmarc.example.com": ["v=DMARC1; p=reject; aspf=s"]}
    assert not _results(relay, strict)["alignment"][0]


def test_without_an_email_channel_it_says_so(cli: Callable[..., Any]) -> None:
    result = cli("doctor", "--email")
    assert result.exit_code == 2
    assert result.stderr.startswith("relay: error: no email channel is configured")
