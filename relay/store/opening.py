"""Opening a store: the one step that may create and migrate a database.

Apart from :mod:`relay.store.database` so that the connection layer never imports
the migrations (alembic imports the connection layer, not the reverse).
"""

from __future__ import annotations

from relay.store.database import HEAD_REVISION, Store, make_engine


def open_store(url: str, *, check: bool = True, create: bool = False) -> Store:
    """Open the store at ``url``, checked against this code's schema.

    With ``create`` an empty database is created and migrated first (alembic is
    imported only then): the default SQLite file on first use, ``relay init``,
    ``relay demo``. Any other database must already be at this code's schema;
    otherwise the user is told to run ``relay db upgrade``. ``check=False`` opens
    it as it is (the ``relay db`` commands, which change the schema).
    """
    store = Store(make_engine(url))
    if not check:
        return store
    revision = store.revision()
    if revision is None and create:
        # alembic is imported only to create a database (most commands never do).
        from relay.store.migrate import upgrade

        upgrade(store)
        return store
    if revision != HEAD_REVISION:
        store.check_schema()
    return store
