"""``relay import``: a conversation per CSV row, through the real CLI."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from cli_checks import ok, valid

Cli = Callable[..., Any]
OBJECTIVE = "Confirm delivery of order {order} for {name}"


def _csv(tmp_path: Path, text: str) -> str:
    path = tmp_path / "contacts.csv"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _import(cli: Cli, path: str, *extra: str) -> Any:
    args = ("import", path, "-o", OBJECTIVE, "-t", "Which day suits {name}?")
    return cli(*args, "--campaign", "spring", *extra, "--json")


ROWS = (
    "phone,name,order,timezone,vip\n"
    "+1 555 123 0001,Ana,1042,Europe/Madrid,yes\n"
    "not a phone,Bob,1043,,\n"
    "+1 555 123 0003,Cy,1044,,\n"
    "+1 555 123 0004,Di,1045,,\n"
    "+1 555 123 0001,Ana,1042,,\n"
    "+1 555 123 0005,Ed,1046,,\n"
)


def test_import_starts_a_conversation_per_row_and_reports_the_rest(
    cli: Cli, api: Any, tmp_path: Path
) -> None:
    from relay.store.models import Contact

    ok(cli("contact", "opt-out", "+15551230003"))
    ok(cli("contact", "set", "+15551230004"))
    with api.store.transaction() as session:
        person = session.query(Contact).filter_by(address="+15551230004").one()
        person.undeliverable_at = api.now()
        person.undeliverable_reason = "hard bounce"
    ok(cli("start", "+15551230005", "-o", "earlier", "-t", "x", "--defer"))
    path = _csv(tmp_path, ROWS)

    report = valid("import", ok(_import(cli, path)).json())
    assert (report["rows"], report["started"], report["skipped"]) == (6, 2, 4)
    by_line = {r["line"]: r for r in report["results"]}
    assert by_line[2]["started"] and by_line[2]["state"] == "CREATED"
    assert "bad address" in by_line[3]["reason"]
    assert by_line[4]["reason"] == "opted out"
    assert by_line[5]["reason"].startswith("undeliverable")
    assert by_line[6]["reason"].startswith("duplicate")
    assert by_line[7]["state"] == "QUEUED"  # behind the conversation started earlier

    ana = ok(cli("show", by_line[2]["instance_id"], "--json")).json()
    assert ana["objective"] == "Confirm delivery of order 1042 for Ana"
    assert ana["todos"][0]["text"] == "Which day suits Ana?"
    assert ana["campaign"] == "spring"
    contact = ok(cli("contact", "show", "+15551230001", "--json")).json()
    assert contact["fields"] == {"name": "Ana", "order": "1042", "vip": "yes"}
    assert contact["timezone"] == "Europe/Madrid"
    assert len(ok(cli("list", "--campaign", "spring", "--json")).json()) == 2

    again = ok(_import(cli, path)).json()
    assert again["started"] == 0
    assert {r["line"]: r["reason"] for r in again["results"]}[2].startswith("duplicate")
    assert len(ok(cli("list", "--campaign", "spring", "--json")).json()) == 2
    assert ok(cli("doctor")).exit_code == 0


def test_a_template_column_missing_or_empty_starts_nothing(cli: Cli, tmp_path: Path) -> None:
    path = _csv(tmp_path, "phone,name\n+15551230001,Ana\n")
    result = _import(cli, path)
    assert result.exit_code == 2
    assert "line 2" in result.stderr and "'order'" in result.stderr
    path = _csv(tmp_path, "phone,name,order\n+15551230001,Ana,1\n+15551230002,,2\n")
    result = _import(cli, path)
    assert result.exit_code == 2 and "line 3: column 'name' is empty" in result.stderr
    assert ok(cli("list", "--json")).json() == []
    result = cli("import", path, "-o", "x", "-t", "y", "--campaign", "c")
    assert result.exit_code == 0  # no template: nothing is needed from the row


def test_dry_run_starts_nothing(cli: Cli, tmp_path: Path) -> None:
    path = _csv(tmp_path, ROWS)
    report = valid("import", ok(_import(cli, path, "--dry-run")).json())
    assert report["dry_run"] and report["started"] == 4 and report["skipped"] == 2
    assert ok(cli("list", "--json")).json() == []
    assert ok(cli("contact", "list", "--json")).json() == []
    text = ok(cli("import", path, "-o", OBJECTIVE, "-t", "t", "--dry-run")).stdout
    assert "would start 4 of 6" in text and "not a phone" in text


def test_the_agent_sees_the_contacts_fields(api: Any, tmp_path: Path) -> None:
    from relay.engine.turns.runner import TurnRunner, read_contexts

    path = _csv(tmp_path, "phone,name,order\n+15551230001,Ana,1042\n")
    report = api.import_csv(path, OBJECTIVE, ["Ask {name}"], campaign="spring")
    assert report.started == 1
    runner = TurnRunner(api, owner="test")
    claimed = runner.claim(10)
    contexts = [context for context, _, _ in read_contexts(api, "test", claimed).values()]
    assert [c.contact_fields for c in contexts] == [{"name": "Ana", "order": "1042"}]
    assert contexts[0].campaign == "spring"
    assert contexts[0].to_json()["contact_fields"]["name"] == "Ana"


def test_an_e164_column_reads_digits_with_their_country_code(cli: Cli, tmp_path: Path) -> None:
    declared = _csv(tmp_path, "wa_id,name,order\n4930123456,Ana,7\n")
    report = ok(_import(cli, declared, "--dry-run")).json()
    assert report["started"] == 1
    plain = _csv(tmp_path, "phone,name,order\n4930123456,Ana,7\n")
    text = ok(cli("import", plain, "-o", OBJECTIVE, "-t", "t", "--dry-run")).stdout
    assert "would start 0 of 1" in text and "+4930123456" in text
