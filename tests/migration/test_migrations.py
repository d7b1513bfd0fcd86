"""Migrations: upgrade and downgrade on both databases, schema equals the models,
the revision check, ``relay db``, and read commands that never import alembic."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text

from relay.core.errors import SchemaOutOfDate
from relay.store import migrate
from relay.store.database import HEAD_REVISION, Store, make_engine
from relay.store.tables import metadata

#: Two contacts, one known by a phone number and one by an email address.
TWO_CONTACTS = text(
    "INSERT INTO contacts (address, kind, created_at, updated_at) VALUES "
    "('+15551230001', 'phone', '2026-01-01 00:00:00', '2026-01-01 00:00:00'), "
    "('ana@example.com', 'email', '2026-01-01 00:00:00', '2026-01-01 00:00:00')"
)
TABLES = {"contacts", "instances", "todos", "messages", "events", "state_entries", "daemons"}


@pytest.fixture
def empty_store(empty_db_url: str) -> Any:
    store = Store(make_engine(empty_db_url))
    yield store
    store.dispose()


def _tables(store: Store) -> set[str]:
    with store.engine.connect() as conn:
        return set(inspect(conn).get_table_names()) - {"alembic_version"}


def test_upgrade_an_empty_database_to_head_and_back_to_base(empty_store: Store) -> None:
    assert empty_store.revision() is None
    migrate.upgrade(empty_store)
    assert empty_store.revision() == HEAD_REVISION
    assert _tables(empty_store) >= TABLES
    empty_store.check_schema()

    migrate.downgrade(empty_store, "base")
    assert empty_store.revision() is None
    assert _tables(empty_store) == set()
    with pytest.raises(SchemaOutOfDate):
        empty_store.check_schema()

    migrate.upgrade(empty_store)  # and up again: downgrade left nothing behind
    assert empty_store.revision() == HEAD_REVISION


def test_every_revision_upgrades_and_downgrades_step_by_step(empty_store: Store) -> None:
    script = ScriptDirectory.from_config(migrate.alembic_config(empty_store))
    revisions = [r.revision for r in reversed(list(script.walk_revisions()))]
    assert revisions, "no revisions found"
    for revision in revisions:
        migrate.upgrade(empty_store, revision)
        assert empty_store.revision() == revision
    for revision in reversed(revisions):
        migrate.downgrade(empty_store, revision)
        assert empty_store.revision() == revision
        migrate.downgrade(empty_store, "-1")
    assert empty_store.revision() is None


def test_the_migrated_schema_equals_the_tables(empty_store: Store) -> None:
    migrate.upgrade(empty_store)
    with empty_store.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        diffs = compare_metadata(context, metadata)
    assert diffs == []


def test_head_revision_constant_is_the_alembic_head(empty_store: Store) -> None:
    script = ScriptDirectory.from_config(migrate.alembic_config(empty_store))
    assert script.get_heads() == [HEAD_REVISION]
    assert migrate.head_revision(empty_store) == HEAD_REVISION


def test_the_unique_slot_index_exists_after_migration(empty_store: Store) -> None:
    migrate.upgrade(empty_store)
    with empty_store.engine.connect() as conn:
        indexes = {i["name"]: i for i in inspect(conn).get_indexes("instances")}
    assert indexes["uq_instances_contact_slot"]["unique"]
    assert indexes["uq_instances_contact_slot"]["column_names"] == ["contact_slot"]


#: The partial indexes (migrations 0008, 0012), by the column whose NULLs they leave out.
#: ``compare_metadata`` does not compare predicates, and the models declare none
#: (a dialect keyword there would load the PostgreSQL dialect in every command).
PARTIAL = {
    "ix_instances_campaign": "campaign",
    "uq_instances_import_key": "import_key",
    "ix_instances_reply_seconds": "reply_seconds",
    "ix_instances_campaign_reply_seconds": "reply_seconds",
    "ix_instances_campaign_updated_at_seq": "campaign",
}


def test_the_indexes_of_mostly_null_columns_are_partial(empty_store: Store) -> None:
    migrate.upgrade(empty_store)
    with empty_store.engine.connect() as conn:
        indexes = {i["name"]: i for i in inspect(conn).get_indexes("instances")}
    dialect = empty_store.dialect
    predicates = {
        name: str(indexes[name]["dialect_options"].get(f"{dialect}_where", "")) for name in PARTIAL
    }
    assert {
        name: column in predicates[name] and "NOT NULL" in predicates[name].upper()
        for name, column in PARTIAL.items()
    } == dict.fromkeys(PARTIAL, True), predicates
    assert indexes["uq_instances_import_key"]["unique"]
    assert "ix_instances_contact_id" not in indexes  # served by (contact_id, state, seq)


# -- refusing a database behind head --------------------------------------------------------


def test_an_unmigrated_database_is_refused_by_the_api(empty_db_url: str) -> None:
    from engine_relay import EngineRelay as Relay

    from relay.config import load_config

    with pytest.raises(SchemaOutOfDate, match=r"run `relay db upgrade`"):
        Relay.open(load_config(overrides={"database.url": empty_db_url}))


def test_a_database_stamped_behind_head_is_refused_by_the_cli(db_url: str, cli: Any) -> None:
    store = Store(make_engine(db_url))
    try:
        with store.engine.begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = '0000'"))
    finally:
        store.dispose()
    for args in (["list"], ["status", "--json"], ["start", "+15551230001", "-o", "o", "-t", "t"]):
        result = cli(*args)
        assert result.exit_code == 2, result
        assert "run `relay db upgrade`" in result.stderr
        assert "0000" in result.stderr
        assert result.stderr.count("\n") == 1, result
        assert "Traceback" not in result.stderr


def test_an_empty_database_is_refused_by_the_cli(empty_db_url: str, run_cli: Any) -> None:
    result = run_cli("list", env={"RELAY_DATABASE_URL": empty_db_url})
    assert result.exit_code == 2, result
    assert "run `relay db upgrade`" in result.stderr


def test_the_default_database_is_created_and_migrated_on_first_use(run_cli: Any) -> None:
    from pathlib import Path

    result = run_cli("list", "--json")
    assert result.exit_code == 0, result
    assert result.json() == []
    path = Path(".relay") / "relay.db"
    assert path.is_file()
    store = Store(make_engine(f"sqlite:///{path}"))
    try:
        assert store.revision() == HEAD_REVISION
    finally:
        store.dispose()


# -- relay db ---------------------------------------------------------------------------------


def test_relay_db_current_and_upgrade(empty_db_url: str, run_cli: Any) -> None:
    env = {"RELAY_DATABASE_URL": empty_db_url}
    result = run_cli("db", "current", env=env)
    assert result.exit_code == 0, result
    assert "current: none" in result.stdout and "run `relay db upgrade`" in result.stdout
    assert run_cli("db", "current", "--json", env=env).json() == {
        "schema_version": 1,
        "current": None,
        "head": HEAD_REVISION,
        "up_to_date": False,
    }

    result = run_cli("db", "upgrade", env=env)
    assert result.exit_code == 0, result
    assert f"upgraded database from empty to {HEAD_REVISION}" in result.stdout
    result = run_cli("db", "upgrade", env=env)
    assert "nothing to do" in result.stdout

    assert run_cli("db", "current", "--json", env=env).json() == {
        "schema_version": 1,
        "current": HEAD_REVISION,
        "head": HEAD_REVISION,
        "up_to_date": True,
    }
    assert "up to date" in run_cli("db", "current", env=env).stdout
    assert run_cli("list", "--json", env=env).json() == []


def test_relay_db_downgrade_needs_confirmation(db_url: str, cli: Any) -> None:
    result = cli("db", "downgrade", "base")
    assert result.exit_code == 2, result
    assert "--yes" in result.stderr
    result = cli("db", "downgrade", "base", "--yes")
    assert result.exit_code == 0, result
    assert cli("db", "current", "--json").json()["current"] is None


# -- read commands stay light ------------------------------------------------------------------

_PROBE = textwrap.dedent(
    """
    import json, sys
    from relay.cli.main import app

    def run(*args):
        try:
            app(args=list(args), prog_name="relay")
        except SystemExit as exit:
            return exit.code
        return 0

    def alembic_loaded():
        return any(m == "alembic" or m.startswith("alembic.") for m in sys.modules)

    report = {"codes": []}
    instance_id = sys.argv[1]
    for args in (
        ["list"], ["list", "--json"], ["show", instance_id], ["show", instance_id, "--json"],
        ["transcript", instance_id], ["history", instance_id, "--json"],
        ["status"], ["status", "--json"], ["db", "current"], ["config", "show"],
    ):
        report["codes"].append(run(*args))
    report["read_loaded_alembic"] = alembic_loaded()
    report["upgrade_code"] = run("db", "upgrade")
    report["upgrade_loaded_alembic"] = alembic_loaded()
    sys.stderr.write("PROBE " + json.dumps(report) + "\\n")
    """
)


def test_read_commands_do_not_import_alembic(db_url: str, relay_api: Any) -> None:
    view = relay_api.start("+15551230001", "Confirm", ["Ask"])
    relay_api.store.dispose()
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, view.id],
        env={**_env_without_relay(), "RELAY_DATABASE_URL": db_url},
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [line for line in result.stderr.splitlines() if line.startswith("PROBE ")]
    assert lines, result.stderr
    report = json.loads(lines[-1][len("PROBE ") :])
    assert report["codes"] == [0] * len(report["codes"]), result.stderr
    assert report["read_loaded_alembic"] is False
    # the probe can see alembic when it is loaded
    assert report["upgrade_code"] == 0
    assert report["upgrade_loaded_alembic"] is True


def _env_without_relay() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("RELAY_")}


def test_0017_gives_every_contact_its_own_address_row_and_back(empty_store: Store) -> None:
    """Contacts of before several addresses per contact are found by their address
    after the upgrade (their own address is copied); the downgrade keeps them."""
    migrate.upgrade(empty_store, "0016")
    with empty_store.engine.begin() as conn:
        conn.execute(TWO_CONTACTS)
    migrate.upgrade(empty_store, "0017")
    with empty_store.engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT c.address, a.kind, a.address FROM contact_addresses a "
                "JOIN contacts c ON c.id = a.contact_id ORDER BY a.address"
            )
        ).all()
    assert [tuple(r) for r in rows] == [
        ("+15551230001", "phone", "+15551230001"),
        ("ana@example.com", "email", "ana@example.com"),
    ]
    with empty_store.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO contact_addresses (contact_id, kind, address, created_at) "
                "SELECT id, 'email', 'cy@example.com', created_at FROM contacts "
                "WHERE address = '+15551230001'"
            )
        )
    migrate.downgrade(empty_store, "0016")
    assert "contact_addresses" not in _tables(empty_store)
    with empty_store.engine.connect() as conn:
        rows = conn.execute(text("SELECT address, fields FROM contacts ORDER BY address")).all()
    fields = [json.loads(f) if isinstance(f, str) else f for _, f in rows]
    assert [a for a, _ in rows] == ["+15551230001", "ana@example.com"]
    assert fields == [{"email": "cy@example.com"}, None]  # the other address is kept


def test_0018_downgrade_widens_a_per_kind_opt_out_to_the_whole_contact(
    empty_store: Store,
) -> None:
    """Going down cannot keep an opt-out of one kind of address: the contact is then
    opted out wholly, never left reachable."""
    migrate.upgrade(empty_store, "0018")
    with empty_store.engine.begin() as conn:
        conn.execute(TWO_CONTACTS)
        conn.execute(
            text(
                "INSERT INTO contact_addresses (contact_id, kind, address, created_at, "
                "opted_out_at, opt_out_reason) SELECT id, kind, address, created_at, "
                "CASE WHEN kind = 'phone' THEN created_at END, "
                "CASE WHEN kind = 'phone' THEN 'inbound on sms' END FROM contacts"
            )
        )
    migrate.downgrade(empty_store, "0017")
    with empty_store.engine.connect() as conn:
        rows = conn.execute(
            text("SELECT address, opt_out_reason FROM contacts ORDER BY address")
        ).all()
    assert [tuple(r) for r in rows] == [
        ("+15551230001", "inbound on sms (phone only)"),
        ("ana@example.com", None),
    ]
    migrate.upgrade(empty_store, "head")
