"""Schema upgrades through Alembic. Imported only by commands that migrate."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Connection

from relay.core.errors import SchemaOutOfDate
from relay.store.database import Store, is_newer, newer_message


def alembic_config(store: Store) -> Config:
    config = Config()
    config.set_main_option("script_location", str(resources.files("relay.migrations")))
    config.set_main_option("sqlalchemy.url", store.engine.url.render_as_string(False))
    return config


def head_revision(store: Store) -> str:
    return ScriptDirectory.from_config(alembic_config(store)).get_current_head() or ""


def upgrade_url(url: str, revision: str = "head") -> None:
    """Migrate the database at ``url`` on an engine of its own (tests, benchmarks)."""
    from relay.store.database import make_engine

    store = Store(make_engine(url))
    try:
        upgrade(store, revision)
    finally:
        store.dispose()


def upgrade(store: Store, revision: str = "head") -> None:
    current = store.revision()
    if current is not None and is_newer(current):
        # Alembic would say it "can't locate revision"; the fix is a newer relay.
        raise SchemaOutOfDate(newer_message(current))
    config = alembic_config(store)
    with _migrating(store) as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, revision)


def downgrade(store: Store, revision: str = "base") -> None:
    config = alembic_config(store)
    with _migrating(store) as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, revision)


@contextmanager
def _migrating(store: Store) -> Iterator[Connection]:
    """One transaction for the migration. On SQLite with foreign keys off: a batch
    operation rebuilds a table (copy, DROP, rename), and dropping ``instances``
    with foreign keys on would cascade-delete every todo, message and transition
    of it. The pragma only takes effect outside a transaction, so it is set on the
    driver's connection before the BEGIN; what the migration left is checked
    before it commits, and the pragma is back on before the connection is reused."""
    if store.dialect != "sqlite":
        with store.engine.begin() as conn:
            yield conn
        return
    with store.engine.connect() as conn:
        raw = conn.connection.dbapi_connection
        assert raw is not None
        raw.execute("PRAGMA foreign_keys=OFF")
        try:
            with conn.begin():
                yield conn
                broken = conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                if broken:
                    raise RuntimeError(f"migration left rows without their parent: {broken[:5]}")
        finally:
            raw.execute("PRAGMA foreign_keys=ON")
