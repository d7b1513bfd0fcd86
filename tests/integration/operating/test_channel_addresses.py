"""Digits with a country code and no ``+`` (``4930123456``, a WhatsApp ``wa_id``) through
the real CLI: read as international when the channel's type writes numbers that way,
refused with both readings on any other channel, in ``relay start`` and ``relay import``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from cli_checks import ok

Cli = Callable[..., Any]
ENV = {"TWILIO_TOKEN": "test-token"}
TWILIO = ['account_sid = "AC' + "0" * 32 + '"', 'auth_token_env = "TWILIO_TOKEN"', "polling = true"]


def _config(tmp_path: Path) -> None:
    lines = ["[defaults]", 'region = "US"', "", "[channels.whatsapp]", 'type = "whatsapp"',
             'from = "+15550002222"', *TWILIO, "", "[channels.wa-sales]", 'type = "whatsapp"',
             'from = "+15550003333"', *TWILIO, "", "[channels.sms]", 'type = "sms"',
             'from = "+15550001111"', *TWILIO]  # fmt: skip
    (tmp_path / "relay.toml").write_text("\n".join(lines) + "\n")


def _start(cli: Cli, number: str, channel: str) -> Any:
    args = ("start", number, "-o", "Confirm", "-t", "Which day?", "--channel", channel)
    return cli(*args, "--defer", "--json", env=ENV)


def test_start_reads_a_whatsapp_number_with_its_country_code(cli: Cli, tmp_path: Path) -> None:
    _config(tmp_path)
    assert ok(_start(cli, "4930123456", "whatsapp")).json()["contact"] == "+4930123456"
    # by the channel's type, not its name
    assert ok(_start(cli, "4930123457", "wa-sales")).json()["contact"] == "+4930123457"


def test_start_on_sms_refuses_it_with_both_readings(cli: Cli, tmp_path: Path) -> None:
    _config(tmp_path)
    refused = _start(cli, "4930123456", "sms")
    assert refused.exit_code == 2, refused
    assert refused.stderr.count("\n") == 1 and refused.stderr.startswith("relay: error: ")
    assert "+14930123456 in region US" in refused.stderr and "+4930123456" in refused.stderr
    assert ok(cli("list", "--json")).json() == []


def test_import_reads_each_row_by_its_channel(cli: Cli, tmp_path: Path) -> None:
    _config(tmp_path)
    path = tmp_path / "contacts.csv"
    path.write_text("contact,channel,name\n4930123456,whatsapp,Ana\n4930123457,sms,Bob\n")
    report = ok(cli("import", str(path), "-o", "Confirm", "-t", "Which day?", "--json",
                    env=ENV)).json()  # fmt: skip
    assert report["started"] == 1 and report["skipped"] == 1
    by_line = {row["line"]: row for row in report["results"]}
    assert by_line[2]["contact"] == "+4930123456" and by_line[2]["started"]
    assert "+14930123457" in by_line[3]["reason"] and "+4930123457" in by_line[3]["reason"]
