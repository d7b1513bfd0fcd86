"""Schema upgrades through Alembic. Imported only by commands that migrate."""

from __future__ import annotations

from importlib import resources

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

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
    with store.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, revision)


def downgrade(store: Store, revision: str = "base") -> None:
    config = alembic_config(store)
    with store.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, revision)
