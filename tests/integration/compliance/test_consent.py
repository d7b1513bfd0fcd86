"""Consent records (issue 30, item 3): ``--consent`` on ``relay contact set`` and
``relay start``, a ``consent`` column in ``relay import``; shown by ``contact show``
and the export; ``[compliance] require_consent`` refuses a contact without one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from relay.core.errors import InvalidInput, NoConsent

PHONE = "+15551230001"
STRICT = {"RELAY_COMPLIANCE_REQUIRE_CONSENT": "true"}


def test_consent_is_kept_on_the_contact_with_when_it_was_recorded(
    make_relay: Callable[..., Any], db_url: str, clock: Any
) -> None:
    relay = make_relay(db_url, clock)
    relay.start(PHONE, "Confirm", ["Day?"], consent="  web   form 2026-03-01 ")
    view = relay.contact(PHONE)
    assert (view.consent, view.consent_at) == ("web form 2026-03-01", clock.now())
    assert view.to_json()["consent"] == "web form 2026-03-01"
    clock.advance(3600)
    relay.set_contact(PHONE, consent="web form 2026-03-01")  # the same: its time stays
    assert relay.contact(PHONE).consent_at == view.consent_at
    relay.set_contact(PHONE, consent="phone call 2026-04-02")
    assert relay.contact(PHONE).consent_at == clock.now()
    with pytest.raises(InvalidInput, match="--consent is empty"):
        relay.set_contact(PHONE, consent=" ")


def test_require_consent_refuses_a_start_without_one(
    make_relay: Callable[..., Any], db_url: str, clock: Any
) -> None:
    relay = make_relay(db_url, clock, **{"compliance.require_consent": True})
    with pytest.raises(NoConsent, match=r"contact \+15551230001 has no consent record"):
        relay.start(PHONE, "Confirm", ["Day?"])
    assert relay.instances() == []
    relay.start(PHONE, "Confirm", ["Day?"], consent="signed form")
    # Recorded once, it counts for later conversations too.
    relay.start(PHONE, "Again", ["Day?"])


def test_import_takes_a_consent_column_and_refuses_rows_without(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    csv = tmp_path / "people.csv"
    csv.write_text("phone,name,consent\n+15551230001,Ana,web form 2026-03-01\n+15551230002,Bo,\n")
    result = cli("import", str(csv), "-o", "Hi {name}", "--todo", "Day?", "--json", env=STRICT)
    assert result.exit_code == 0, result
    rows = result.json()["results"]
    assert [r["started"] for r in rows] == [True, False]
    assert rows[1]["reason"] == "no consent record ([compliance] require_consent is on)"
    shown = cli("contact", "show", "+15551230001", "--json").json()
    assert shown["consent"] == "web form 2026-03-01"
    assert "consent" not in shown["fields"]
    text = cli("contact", "show", "+15551230001").stdout
    assert "web form 2026-03-01 (recorded" in text

    refused = cli("start", "+15551230003", "-o", "x", "--todo", "y", env=STRICT)
    assert refused.exit_code == 2
    assert refused.stderr.strip().splitlines() == [
        'relay: error: contact +15551230003 has no consent record: give --consent "WHERE WHEN" '
        "([compliance] require_consent is on)"
    ]
    started = cli(
        "start", "+15551230003", "-o", "x", "--todo", "y", "--consent", "call", env=STRICT
    )
    assert started.exit_code == 0, started
    set_ = cli("contact", "set", "+15551230002", "--consent", "paper form", "--json")
    assert set_.json()["consent"] == "paper form"
