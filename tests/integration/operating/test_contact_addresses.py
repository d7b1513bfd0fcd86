"""Several addresses per contact: ``relay contact set --email/--phone/--telegram``,
an import's address and channels columns, and a reply from any address."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_checks import ok, valid
from messaging_fakes import ACCOUNT, TOKEN

Cli = Callable[..., Any]
PHONE = "+15551230001"
START = ("start", PHONE, "-o", "Confirm the delivery", "-t", "Which day suits you?")


def test_contact_set_gives_a_contact_its_other_addresses(cli: Cli) -> None:
    data = valid(
        "contact",
        ok(cli("contact", "set", PHONE, "--email", "Ana@Example.com", "--json")).json(),
    )
    assert data["addresses"] == {"phone": PHONE, "email": "ana@example.com"}
    # One person, found by either address.
    shown = ok(cli("contact", "show", "ana@example.com", "--json")).json()
    assert shown["contact"] == PHONE
    assert "ana@example.com" in ok(cli("contact", "show", PHONE)).stdout
    again = ok(cli("contact", "set", PHONE, "--telegram", "12345", "--json")).json()
    assert again["addresses"]["telegram"] == "telegram:12345"
    assert again["addresses"]["email"] == "ana@example.com"  # kept


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("--phone", "+15551230002"), "known by its phone"),
        (("--email", "not-an-email"), "--email 'not-an-email': invalid contact"),
        (("--email", "+15551230009"), "is a phone address, not email"),
        (("--email", "bob@example.com"), "another contact's address"),
    ],
)
def test_contact_set_refuses_what_would_confuse_two_people(
    cli: Cli, args: tuple[str, ...], error: str
) -> None:
    ok(cli("contact", "set", "bob@example.com"))
    ok(cli("contact", "set", PHONE))
    refused = cli("contact", "set", PHONE, *args)
    assert refused.exit_code == 2 and error in refused.stderr, str(refused)
    assert refused.stderr.startswith("relay: error:")
    assert "email" not in ok(cli("contact", "show", PHONE, "--json")).json()["addresses"]


def test_a_reply_from_another_address_reaches_the_conversation(cli: Cli) -> None:
    ok(cli("contact", "set", PHONE, "--email", "ana@example.com"))
    iid = ok(cli(*START, "--json")).json()["id"]
    ok(cli("receive", "ana@example.com", "Thursday works"))
    shown = ok(cli("show", iid, "--json")).json()
    assert shown["state"] == "WAITING_FOR_AGENT"
    listed = ok(cli("list", "--contact", "ana@example.com", "--json")).json()
    assert [i["id"] for i in listed] == [iid]
    transcript = valid("transcript", ok(cli("transcript", iid, "--json")).json())
    assert [m["channel"] for m in transcript] == ["console", "cli"]
    assert "cli" in ok(cli("transcript", iid)).stdout


def test_an_opt_out_on_one_channel_stops_every_channel(cli: Cli) -> None:
    ok(cli("contact", "set", PHONE, "--email", "ana@example.com"))
    ok(cli("receive", PHONE, "STOP"))
    assert ok(cli("contact", "show", "ana@example.com", "--json")).json()["opted_out"]
    refused = cli("start", "ana@example.com", "-o", "x", "-t", "y")
    assert refused.exit_code != 0 and "opted out" in refused.stderr


@pytest.fixture
def laddered(make_relay: Callable[..., Any], db_url: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("TWILIO_TOKEN", TOKEN)
    settings = {
        "channels.sms.type": "sms",
        "channels.sms.account_sid": ACCOUNT,
        "channels.sms.auth_token_env": "TWILIO_TOKEN",
        "channels.sms.from": "+15550001111",
        "channels.sms.polling": True,
        "channels.email.type": "email",
        "channels.email.host": "127.0.0.1",
        "channels.email.from": "sales@example.org",
    }
    return make_relay(db_url, None, **settings)


def test_import_takes_address_and_channels_columns(laddered: Any, tmp_path: Path) -> None:
    path = tmp_path / "people.csv"
    path.write_text(
        "contact,email,channels,name\n"
        '+1 555 123 0001,Ana@Example.com,"sms,email",Ana\n'
        'bob@example.com,,"sms,email",Bob\n'
        "+1 555 123 0003,,email,Cy\n"
        "+1 555 123 0004,ana@example.com,sms,Di\n",
        encoding="utf-8",
    )
    report = laddered.import_csv(path, "Confirm for {name}", ["Which day?"])
    by_line = {r.line: r for r in report.rows}
    assert by_line[2].started, report.rows
    ana = laddered.get(by_line[2].instance_id)
    assert (ana.channel, ana.channels) == ("sms", ("sms", "email"))
    assert laddered.contact(PHONE).fields == {"name": "Ana"}  # addresses are not fields
    assert laddered.contact("ana@example.com").address == PHONE
    bob = laddered.get(by_line[3].instance_id)
    assert (bob.channel, bob.channels) == ("email", ("email",))  # sms cannot reach it
    assert not by_line[4].started and "cannot reach a phone number" in (by_line[4].reason or "")
    assert not by_line[5].started and "another contact's address" in (by_line[5].reason or "")


def test_start_with_a_ladder_and_fallback_after(laddered: Any) -> None:
    laddered.set_contact(PHONE, addresses={"email": "ana@example.com"})
    view = laddered.start(PHONE, "x", ["y"], channel="email,sms", fallback_after="12h", defer=True)
    assert (view.channel, view.channels) == ("email", ("email", "sms"))
    from relay.core.jsonshape import versioned

    data = valid("instance", versioned(view.to_json()))
    assert data["channels"] == ["email", "sms"]
    from relay.core.errors import InvalidInput

    with pytest.raises(InvalidInput, match="fallback-after"):
        laddered.start(PHONE, "x", ["y"], channel="email,sms", fallback_after="0s")


def test_contact_opt_out_by_channel_kind_and_back(cli: Cli, tmp_path: Path) -> None:
    config = tmp_path / "scoped.toml"  # not the relay.toml the default run would find
    config.write_text('[compliance]\noptout_scope = "channel"\n', encoding="utf-8")
    env = {"RELAY_CONFIG": str(config)}
    ok(cli("contact", "set", PHONE, "--email", "ana@example.com", env=env))
    data = valid(
        "contact",
        ok(cli("contact", "opt-out", PHONE, "--channel-kind", "sms", "--json", env=env)).json(),
    )
    assert not data["opted_out"] and list(data["opted_out_kinds"]) == ["phone"]
    assert "opted out of phone" in ok(cli("contact", "show", PHONE, env=env)).stdout
    ok(cli("start", "ana@example.com", "-o", "x", "-t", "y", "--channel", "console", env=env))
    back = ok(cli("contact", "opt-in", PHONE, "--channel-kind", "sms", "--json", env=env)).json()
    assert back["opted_out_kinds"] == {}
    refused = cli("contact", "opt-out", PHONE, "--channel-kind", "fax", env=env)
    assert refused.exit_code == 2 and refused.stderr.startswith("relay: error: --channel-kind")
    default = cli("contact", "opt-out", PHONE, "--channel-kind", "sms")
    assert default.exit_code == 2 and "optout_scope" in default.stderr


def test_import_takes_fallback_after(laddered: Any, tmp_path: Path) -> None:
    path = tmp_path / "people.csv"
    path.write_text('contact,email,channels\n+1 555 123 0001,ana@example.com,"sms,email"\n')
    report = laddered.import_csv(path, "Confirm", ["Which day?"], fallback_after="12h")
    [row] = report.rows
    assert laddered.get(row.instance_id).channels == ("sms", "email")
    from sqlalchemy import select

    from relay.store.models import Instance

    with laddered.store.transaction() as session:
        query = select(Instance.fallback_seconds).where(Instance.id == row.instance_id)
        assert session.scalar(query) == 12 * 3600
    from relay.core.errors import InvalidInput

    with pytest.raises(InvalidInput, match="fallback-after"):
        laddered.import_csv(path, "Again", ["Which day?"], fallback_after="soon")
