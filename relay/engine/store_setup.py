"""Opening the store a configuration names, creating the default database on first use."""

from __future__ import annotations

from relay.config import Config
from relay.store.database import HEAD_REVISION, Store, make_engine


def open_store(config: Config, *, check: bool = True, create: bool = False) -> Store:
    """Open the configured store.

    The default SQLite database is created and migrated the first time it is
    used (alembic is imported only then), as is any empty database when
    ``create`` is set (``relay init``, ``relay demo``). Any other database must already be
    at this code's schema; otherwise the user is told to run ``relay db upgrade``.
    """
    store = Store(make_engine(config.database_url))
    if not check:
        return store
    revision = store.revision()
    if revision is None and (create or config.uses_default_database):
        from relay.store.migrate import upgrade

        upgrade(store)
        return store
    if revision != HEAD_REVISION:
        store.check_schema()
    return store
