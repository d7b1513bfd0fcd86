"""``relay contact export`` and ``relay contact erase`` (issue 30, item 4), on both
databases: the export holds every row about the person; after the erase no text
column of any table holds the person's address or words, the other contact's rows
are untouched, and a new ``start`` or ``import`` of the address is refused."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import JSON, String, Text, insert, inspect, select
from sqlalchemy import Table as SaTable

from relay import schemas
from relay.core.errors import ConfigError, Erased, NotFound
from relay.store.tables import inbound_rejects, metadata, state_entries

KEY = "0123456789abcdef-test-erasure-key"
PERSON = "Ana Lima <ana.lima@example.com>"
ADDRESS = "ana.lima@example.com"
#: What only the person wrote or is called: none of it may survive the erase.
WORDS = ("ana.lima@example.com", "Zanzibarquux", "Ana Lima", "Plumtreeville")
OTHER = "+15559990000"


@pytest.fixture
def relay_api(db_url: str, clock: Any) -> Iterator[Any]:
    """The public Relay (``run_due`` is the facade's) on this test's database."""
    from relay.api import Relay
    from relay.config import load_config

    with Relay.open(load_config(overrides={"database.url": db_url}), clock=clock) as relay:
        yield relay


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_ERASURE_KEY", KEY)


def _held(relay: Any) -> dict[str, list[str]]:
    """Every text value of every table, found by inspecting the database itself."""
    found: dict[str, list[str]] = {}
    with relay.store.engine.connect() as conn:
        inspector = inspect(conn)
        for name in inspector.get_table_names():
            columns = [
                c["name"]
                for c in inspector.get_columns(name)
                if isinstance(c["type"], (String, Text, JSON)) or "CHAR" in str(c["type"])
                or "TEXT" in str(c["type"]) or "JSON" in str(c["type"])
            ]  # fmt: skip
            if not columns:
                continue
            table = SaTable(name, metadata.__class__(), autoload_with=conn)
            for row in conn.execute(select(*(table.c[c] for c in columns))):
                found.setdefault(name, []).extend(
                    json.dumps(v, default=str) if not isinstance(v, str) else v
                    for v in row
                    if v is not None
                )
    return found


def _mentions(relay: Any, words: tuple[str, ...]) -> list[tuple[str, str]]:
    return [
        (table, value)
        for table, values in _held(relay).items()
        for value in values
        for word in words
        if word.lower() in value.lower()
    ]


def _person_everywhere(relay: Any) -> str:
    """A person with a conversation, a reply, an answer, scoped state, an unrouted
    message, a contact-level command and a rejected inbound; and someone else."""
    relay.receive(ADDRESS, "Before anything: Zanzibarquux here")  # unrouted
    relay.set_contact(ADDRESS, timezone="Europe/Madrid", consent="web form 2026-03-01")
    view = relay.start(
        PERSON, "Confirm the Plumtreeville delivery", ["Which day?"], defer=False,
        meta={"crm": "Ana Lima"},
    )  # fmt: skip
    relay.receive(ADDRESS, "Thursday, says Zanzibarquux")
    relay.run_due(poll=False)
    with relay.store.transaction() as session:
        for scope, scope_id in (("instance", view.id), ("contact", _contact_id(relay))):
            session.execute(
                insert(state_entries).values(
                    scope=scope, scope_id=scope_id, key="note", value={"said": "Zanzibarquux"},
                    updated_at=relay.now(),
                )
            )  # fmt: skip
        session.execute(
            insert(inbound_rejects).values(
                channel="email", sender=f"Ana Lima <{ADDRESS}>", body="Zanzibarquux again",
                error="test", created_at=relay.now(),
            )
        )  # fmt: skip
    other = relay.start(OTHER, "Confirm the order", ["Which day?"], defer=False)
    relay.receive(OTHER, "Friday")
    relay.run_due(poll=False)
    return str(other.id)


def _contact_id(relay: Any) -> str:
    from relay.store.tables import contacts

    with relay.store.read_transaction() as session:
        return str(session.scalar(select(contacts.c.id).where(contacts.c.address == ADDRESS)))


def test_export_holds_every_row_about_the_person(relay_api: Any, keyed: None) -> None:
    _person_everywhere(relay_api)
    document = relay_api.export_contact(PERSON)
    schemas.validator("contact-export").validate({"schema_version": 1, **document})
    assert document["contact"]["address"] == ADDRESS
    assert document["consent"]["text"] == "web form 2026-03-01"
    assert len(document["instances"]) == 1
    bodies = " ".join(m["body"] for m in document["messages"])
    assert "Before anything" in bodies and "Thursday, says Zanzibarquux" in bodies
    assert any(t["answer"] for t in document["todos"])
    assert {e["scope"] for e in document["state_entries"]} == {"instance", "contact"}
    assert [r["body"] for r in document["inbound_rejects"]] == ["Zanzibarquux again"]
    kinds = {e["kind"] for e in document["events"]}
    assert {"command", "message.received", "state.changed"} <= kinds
    assert OTHER not in json.dumps(document)
    # The export is audited, in the log by itself.
    (audited,) = [e for e in relay_api.events() if e.data.get("command") == "contact export"]
    assert audited.data["args"] == {"contact": ADDRESS}


def test_erase_leaves_no_row_holding_the_person(relay_api: Any, keyed: None) -> None:
    other = _person_everywhere(relay_api)
    assert _mentions(relay_api, WORDS)  # the search does find them while they are held
    kept_before = _mentions(relay_api, (OTHER, "Friday"))

    done = relay_api.erase_contact(ADDRESS)

    schemas.validator("contact-erase").validate({"schema_version": 1, **done.to_json()})
    assert done.found and done.suppressed == 1
    assert done.deleted["messages"] >= 4 and done.deleted["instances"] == 1
    assert _mentions(relay_api, WORDS) == []
    assert _mentions(relay_api, (OTHER, "Friday")) == kept_before
    assert relay_api.get(other).state != "FAILED"
    with pytest.raises(NotFound):
        relay_api.contact(ADDRESS)
    (audited,) = [e for e in relay_api.events() if e.data.get("command") == "contact erase"]
    assert ADDRESS not in json.dumps(audited.data)


def test_an_erased_address_is_refused_ever_after(relay_api: Any, keyed: None) -> None:
    relay_api.start(ADDRESS, "Confirm", ["Day?"])
    erased = relay_api.erase_contact(ADDRESS)
    day = erased.erased_at.date().isoformat()
    for attempt in (
        lambda: relay_api.start(PERSON.upper().replace("ANA.LIMA", "ana.lima"), "Again", ["Day?"]),
        lambda: relay_api.set_contact(ADDRESS, consent="phone call"),
    ):
        with pytest.raises(Erased, match=f"erased on {day}"):
            attempt()
    # Erasing an address relay never held still suppresses it.
    assert not relay_api.erase_contact("+15551239999").found
    with pytest.raises(Erased):
        relay_api.start("+1 555 123 9999", "Confirm", ["Day?"])


def test_without_the_key_nothing_is_erased_and_nothing_risked(
    relay_api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RELAY_ERASURE_KEY", raising=False)
    relay_api.start(ADDRESS, "Confirm", ["Day?"])
    with pytest.raises(ConfigError, match="RELAY_ERASURE_KEY"):
        relay_api.erase_contact(ADDRESS)
    assert relay_api.contact(ADDRESS).address == ADDRESS
    monkeypatch.setenv("RELAY_ERASURE_KEY", KEY)
    relay_api.erase_contact(ADDRESS)
    monkeypatch.delenv("RELAY_ERASURE_KEY")
    with pytest.raises(ConfigError, match="cannot tell whether this address was erased"):
        relay_api.start(OTHER, "Confirm", ["Day?"])
    monkeypatch.setenv("RELAY_ERASURE_KEY", "another-key-of-enough-length")
    with pytest.raises(ConfigError, match="not the key"):
        relay_api.start(OTHER, "Confirm", ["Day?"])


def test_the_cli_exports_erases_and_refuses(cli: Callable[..., Any], tmp_path: Path) -> None:
    env = {"RELAY_ERASURE_KEY": KEY}
    assert cli("start", ADDRESS, "-o", "Confirm", "--todo", "Day?", env=env).exit_code == 0
    exported = cli("contact", "export", ADDRESS, env=env)
    assert exported.exit_code == 0, exported
    schemas.validator("contact-export").validate(exported.json())
    target = tmp_path / "ana.json"
    assert cli("contact", "export", ADDRESS, "-o", str(target), env=env).exit_code == 0
    assert json.loads(target.read_text())["contact"]["address"] == ADDRESS

    unconfirmed = cli("contact", "erase", ADDRESS, env=env)
    assert (unconfirmed.exit_code, unconfirmed.stderr.strip()) == (
        2, "relay: error: erasing deletes everything about the contact; pass --yes to confirm"
    )  # fmt: skip
    erased = cli("contact", "erase", ADDRESS, "--yes", "--json", env=env)
    assert erased.exit_code == 0, erased
    schemas.validator("contact-erase").validate(erased.json())

    again = cli("start", ADDRESS, "-o", "Confirm", "--todo", "Day?", env=env)
    assert again.exit_code == 2
    assert again.stderr.startswith(f"relay: error: contact {ADDRESS} was erased on ")
    assert len(again.stderr.strip().splitlines()) == 1
    csv = tmp_path / "people.csv"
    csv.write_text(f"email,name\n{ADDRESS},Ana\n+15551230002,Bo\n")
    imported = cli("import", str(csv), "-o", "Hi {name}", "--todo", "Day?", "--json", env=env)
    assert imported.exit_code == 0, imported
    reasons = [r["reason"] for r in imported.json()["results"]]
    assert reasons[0].startswith("erased on ") and reasons[1] is None
