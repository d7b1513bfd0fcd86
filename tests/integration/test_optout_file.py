"""`relay contact opt-out --file`: a do-not-contact list, imported idempotently;
`relay receive` cuts long text as a channel does; "Name <addr>" names the contact."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

Cli = Callable[..., Any]


def test_a_list_is_imported_once(cli: Cli, tmp_path: Path) -> None:
    listing = tmp_path / "dnc.txt"
    lines = ["+15551230001", "ana@x.com", "", "# note", "not a thing", "4930123456", "Ana@X.com"]
    listing.write_text("\n".join(lines) + "\n")
    first = cli("contact", "opt-out", "--file", str(listing), "--json")
    assert first.exit_code == 0, first
    data = first.json()
    assert (data["added"], data["already"]) == (2, 1)
    assert [i["line"] for i in data["invalid"]] == [5, 6]
    assert "+4930123456" in data["invalid"][1]["error"]
    again = cli("contact", "opt-out", "--file", str(listing), "--json").json()
    assert (again["added"], again["already"]) == (0, 3)
    shown = cli("contact", "show", "ana@x.com", "--json").json()
    assert shown["opted_out"] is True


def test_a_csv_column(cli: Cli, tmp_path: Path) -> None:
    listing = tmp_path / "dnc.csv"
    listing.write_text("name,Email\nAna,ana@x.com\nBo,bo@y.com\nCy,\n")
    refused = cli("contact", "opt-out", "--file", str(listing))
    assert refused.exit_code == 2 and "--column" in refused.stderr
    result = cli("contact", "opt-out", "--file", str(listing), "--column", "email")
    assert result.exit_code == 0, result
    assert "2 added, 0 already there, 0 invalid" in result.stdout
    missing = cli("contact", "opt-out", "--file", str(listing), "--column", "phone")
    assert missing.exit_code == 2 and "no column 'phone'" in missing.stderr


def test_contact_or_file(cli: Cli) -> None:
    assert cli("contact", "opt-out").exit_code == 2


def test_receive_cuts_long_text_with_a_note(cli: Cli) -> None:
    result = cli("receive", "+15551230001", "x" * 100_500, "--json")
    assert result.exit_code == 0, result
    message = result.json()
    assert message["note"] == "truncated from 100500 characters"


def test_a_display_name_names_the_contact(cli: Cli) -> None:
    result = cli("start", "Ana Lima <ana@x.com>", "-o", "Ask", "-t", "Day?", "--defer", "--json")
    assert result.exit_code == 0, result
    assert cli("contact", "show", "ana@x.com", "--json").json()["fields"]["name"] == "Ana Lima"
