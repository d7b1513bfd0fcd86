"""Engine and transaction setup for SQLite and PostgreSQL, and the schema check.

SQLite runs in WAL mode with foreign keys and a busy timeout, and every
transaction starts with ``BEGIN IMMEDIATE`` so two writers queue on the file
lock instead of failing half-way with "database is locked" on upgrade.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.exc import OperationalError, ProgrammingError
from sqlalchemy.orm import Session, sessionmaker

from relay.core.errors import ConfigError, SchemaOutOfDate
from relay.core.secrets import mask_text, mask_url

# relay.store.events (whose listeners insert event rows at commit) is not imported
# here: whatever adds an event row imports it first, and a read command adds none.

# The newest Alembic revision this code expects. A test checks that it is the
# head of migrations/, so read commands can check the schema without alembic.
HEAD_REVISION = "0020"

SQLITE_BUSY_TIMEOUT_MS = 30_000

#: Execution option that marks a connection's transactions as reads.
READ_ONLY_OPTION = "relay_read_only"


def normalise_url(url: str) -> str:
    """Let users write ``postgresql://``; relay drives PostgreSQL through psycopg 3."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def make_engine(url: str, **kwargs: Any) -> Engine:
    url = normalise_url(url)
    if url.startswith("sqlite"):
        return _sqlite_engine(url, **kwargs)
    if url.startswith("postgresql+psycopg:"):
        _require_psycopg()
    try:
        return create_engine(url, pool_pre_ping=True, **kwargs)
    except Exception as exc:
        raise ConfigError(
            f"cannot use database URL {mask_url(url)!r}: {mask_text(str(exc))}"
        ) from exc


def _require_psycopg() -> None:
    """PostgreSQL support is an extra; say how to get it rather than which module
    failed to import deep inside SQLAlchemy."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise ConfigError(
            "a PostgreSQL database needs its driver: pip install 'relay-outreach[postgres]'"
        ) from None


def _sqlite_engine(url: str, **kwargs: Any) -> Engine:
    path = url.split(":///", 1)[1] if ":///" in url else ""
    if path and path != ":memory:" and not path.startswith("file:"):
        _private_file(Path(path))
    if path and _read_only(Path(path)):
        kwargs.setdefault("creator", _immutable(Path(path)))
    engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}, **kwargs)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Take transaction control from the driver so BEGIN IMMEDIATE is ours.
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        with suppress(sqlite3.OperationalError):
            # A read-only file cannot change its journal; reads still work.
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        # A read takes no write lock, so it works on a read-only file and never
        # queues behind a writer (WAL readers see the last commit).
        reading = conn.get_execution_options().get(READ_ONLY_OPTION)
        conn.exec_driver_sql("BEGIN" if reading else "BEGIN IMMEDIATE")

    return engine


def _private_file(path: Path) -> None:
    """Create a new database file (and its folder) owner-only: it holds every
    contact's words. SQLite gives its -wal and -shm files the same mode. An
    existing file keeps the mode its owner chose."""
    if not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not path.exists():
        with suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def _read_only(path: Path) -> bool:
    """A database file we cannot write, or one in a folder we cannot write (so its
    WAL index cannot be created): only reads are possible."""
    if not path.is_file():
        return False
    return not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))


def _immutable(path: Path) -> Callable[[], sqlite3.Connection]:
    """Open a read-only database as immutable: SQLite then needs no -shm file
    (which a read-only folder cannot hold) and takes no locks. Nobody can be
    writing a file we may not write, unless its owner is; writes fail plainly."""
    uri = f"file:{quote(str(path.resolve()))}?immutable=1"

    def connect() -> sqlite3.Connection:
        return sqlite3.connect(
            uri, uri=True, timeout=SQLITE_BUSY_TIMEOUT_MS / 1000, check_same_thread=False
        )

    return connect


def is_newer(revision: str) -> bool:
    """Whether a stamped revision comes after this code's head (revisions are
    numbered ``0001``, ``0002``...; one this code has never heard of is newer too)."""
    if revision == HEAD_REVISION:
        return False
    if revision.isdigit() and HEAD_REVISION.isdigit():
        return int(revision) > int(HEAD_REVISION)
    return True


def newer_message(revision: str) -> str:
    return (
        f"the database is at revision {revision}, newer than this relay "
        f"(knows up to {HEAD_REVISION}); upgrade relay"
    )


class Store:
    """The engine plus a session factory; ``transaction()`` is one unit of work."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._reader = engine.execution_options(**{READ_ONLY_OPTION: True})
        self._readers = sessionmaker(self._reader, expire_on_commit=False)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @property
    def writers_serialised(self) -> bool:
        """Whether a write transaction excludes every other writer from its first
        read to its commit (SQLite's ``BEGIN IMMEDIATE``): what it read cannot
        change under it, even rows it did not lock. PostgreSQL locks rows."""
        return self.dialect == "sqlite"

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        with self._sessions() as session, session.begin():
            yield session

    @contextmanager
    def read_transaction(self) -> Iterator[Session]:
        """A transaction for read commands: no write lock on SQLite (so a read-only
        database file still serves ``list`` and ``show``), READ ONLY on PostgreSQL."""
        with self._readers() as session, session.begin():
            if self.dialect == "postgresql":
                session.execute(text("SET TRANSACTION READ ONLY"))
            yield session

    def revision(self) -> str | None:
        """The schema revision stamped in the database, or None if it has none."""
        with self._reader.connect() as conn:
            if not inspect(conn).has_table("alembic_version"):
                return None
            try:
                return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
            except (OperationalError, ProgrammingError):
                return None

    def check_schema(self) -> None:
        """Refuse to work on a database whose schema is not this code's head."""
        current = self.revision()
        if current is not None and is_newer(current):
            raise SchemaOutOfDate(newer_message(current))
        if current != HEAD_REVISION:
            found = current or "no relay schema"
            raise SchemaOutOfDate(
                f"database schema is at {found}, relay needs {HEAD_REVISION}; "
                "run `relay db upgrade`"
            )

    def dispose(self) -> None:
        self.engine.dispose()


def affected(result: Any) -> int:
    """Rows an UPDATE or DELETE touched (``rowcount`` is on the cursor result, which
    SQLAlchemy's types do not promise for ``Session.execute``)."""
    return int(getattr(result, "rowcount", 0) or 0)
