"""``relay inspect mail|text|address``: the daemon's own reading of a message, through the
real entry point, with no database and no relay.toml; every --json line fits its schema."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from relay.channels.mail.parse import Mailbox, parse_mail

DATA = Path(__file__).resolve().parents[1] / "data" / "mail"
Cli = Callable[..., Any]


def _lines(result: Any, schema: str) -> list[dict[str, Any]]:
    assert result.exit_code == 0, result
    from importlib import resources

    document = json.loads(resources.files("relay.schemas").joinpath(f"{schema}.json").read_text())
    validator = Draft202012Validator(document)
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    for row in rows:
        assert list(validator.iter_errors(row)) == []
    return rows


def test_inspect_mail_reads_each_file_as_the_daemon_does(run_cli: Cli, tmp_path: Path) -> None:
    files = [DATA / "sisimai" / "lhost-postfix-04.eml", DATA / "sisimai" / "rfc3834-01.eml",
             DATA / "sisimai" / "arf-01.eml", DATA / "sisimai" / "rfc3464-28.eml"]  # fmt: skip
    rows = _lines(run_cli("inspect", "mail", *map(str, files), "--json"), "inspect-mail")
    assert [r["kind"] for r in rows] == ["bounce", "auto_reply", "complaint", "delivery_report"]
    assert [r["file"] for r in rows] == [str(f) for f in files]
    bounce = rows[0]["bounce"]
    assert bounce["reason"] == "user_unknown" and bounce["permanent"] is True
    assert bounce["status"] == "5.1.1" and bounce["recipients"] == ["kijitora@example.co.jp"]
    assert rows[1]["auto_reply"] == {"return_date": "2005-05-05"}
    assert rows[2]["opt_out"] is True
    # The same decision as the daemon's parser: a permanent bounce receipt.
    receipt = parse_mail(files[0].read_bytes(), None, Mailbox("a@x.org", "u@x.org"))
    assert getattr(receipt, "permanent", None) is True
    table = run_cli("inspect", "mail", str(files[0]))
    assert table.exit_code == 0 and "user_unknown" in table.stdout


def test_inspect_mail_refuses_a_missing_file_before_printing(run_cli: Cli) -> None:
    good = str(DATA / "sisimai" / "arf-01.eml")
    result = run_cli("inspect", "mail", good, "/nonexistent/mail.eml", "--json")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("relay: error: cannot read /nonexistent/mail.eml")


def test_inspect_text_reads_one_message_a_line(run_cli: Cli) -> None:
    result = run_cli("inspect", "text", "--json", input="STOP\nsounds good, Thursday\nSTART\n")
    rows = _lines(result, "inspect-text")
    assert [(r["opt_out"], r["opt_in"]) for r in rows] == [(True, False), (False, False),
                                                           (False, True)]  # fmt: skip
    assert rows[1]["text"] == "sounds good, Thursday"


def test_inspect_address_normalises_or_says_why_not(run_cli: Cli) -> None:
    result = run_cli("inspect", "address", "+1 555 123 0001", "Ana@X.com", "bad@", "--json")
    rows = _lines(result, "inspect-address")
    assert [r["address"] for r in rows] == ["+15551230001", "ana@x.com", None]
    assert rows[0]["error"] is None and rows[2]["error"].startswith("invalid email address")
    assert "\n" not in rows[2]["error"]
    table = run_cli("inspect", "address", "bad@")
    assert table.exit_code == 0 and "invalid email address" in table.stdout


def test_inspect_address_reads_a_channel_by_its_type(run_cli: Cli, tmp_path: Path) -> None:
    """As ``relay start`` does: a WhatsApp channel's digits carry their country code."""
    bare = _lines(run_cli("inspect", "address", "4930123456", "--channel", "whatsapp", "--json"),
                  "inspect-address")  # fmt: skip
    assert bare[0]["address"] == "+4930123456"
    (tmp_path / "relay.toml").write_text('[channels.wa]\ntype = "whatsapp"\n')
    named = run_cli("inspect", "address", "4930123456", "--channel", "wa", "--json")
    assert _lines(named, "inspect-address")[0]["address"] == "+4930123456"
    sms = _lines(run_cli("inspect", "address", "4930123456", "--channel", "sms", "--json"),
                 "inspect-address")  # fmt: skip
    assert sms[0]["address"] is None and "+14930123456" in sms[0]["error"]
