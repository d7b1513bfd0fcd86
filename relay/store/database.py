"""Engine and transaction setup for SQLite and PostgreSQL, and the schema check.

SQLite runs in WAL mode with foreign keys and a busy timeout, and every
transaction starts with ``BEGIN IMMEDIATE`` so two writers queue on the file
lock instead of failing half-way with "database is locked" on upgrade.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.exc import OperationalError, ProgrammingError
from sqlalchemy.orm import Session, sessionmaker

from relay.core.errors import ConfigError, SchemaOutOfDate

# The newest Alembic revision this code expects. A test checks that it is the
# head of migrations/, so read commands can check the schema without alembic.
HEAD_REVISION = "0002"

SQLITE_BUSY_TIMEOUT_MS = 30_000


def normalise_url(url: str) -> str:
    """Let users write ``postgresql://``; relay drives PostgreSQL through psycopg 3."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def make_engine(url: str, **kwargs: Any) -> Engine:
    url = normalise_url(url)
    if url.startswith("sqlite"):
        return _sqlite_engine(url, **kwargs)
    try:
        return create_engine(url, pool_pre_ping=True, **kwargs)
    except Exception as exc:
        raise ConfigError(f"cannot use database URL {url!r}: {exc}") from exc


def _sqlite_engine(url: str, **kwargs: Any) -> Engine:
    path = url.split(":///", 1)[1] if ":///" in url else ""
    if path and path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}, **kwargs)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Take transaction control from the driver so BEGIN IMMEDIATE is ours.
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


class Store:
    """The engine plus a session factory; ``transaction()`` is one unit of work."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        with self._sessions() as session, session.begin():
            yield session

    def revision(self) -> str | None:
        """The schema revision stamped in the database, or None if it has none."""
        with self.engine.connect() as conn:
            if not inspect(conn).has_table("alembic_version"):
                return None
            try:
                return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
            except (OperationalError, ProgrammingError):
                return None

    def check_schema(self) -> None:
        """Refuse to work on a database whose schema is not this code's head."""
        current = self.revision()
        if current != HEAD_REVISION:
            found = current or "no relay schema"
            raise SchemaOutOfDate(
                f"database schema is at {found}, relay needs {HEAD_REVISION}; "
                "run `relay db upgrade`"
            )

    def dispose(self) -> None:
        self.engine.dispose()
