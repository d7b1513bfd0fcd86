"""The pushes ``relay serve`` stores and the daemon takes: appended by the
server's writers (``PushWriter`` in :mod:`relay.runner.serve`), read in order, and deleted
by the transaction that ingests them (``relay.engine.verbs.incoming.ingest(taking=...)``)."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, func, select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from relay.store import failures
from relay.store.database import Store, affected
from relay.store.hotpath import fast_writes
from relay.store.tables import pushes


class Appender:
    """One writer's connection, kept from batch to batch: no pool checkout (and
    its pre-ping round trip on PostgreSQL) per batch. On PostgreSQL in autocommit,
    as a batch is one INSERT (:func:`fast_writes.insert_rows_on`): it commits in
    its one round trip, without a BEGIN and a COMMIT of its own. On SQLite one
    ``BEGIN IMMEDIATE`` transaction of one ``executemany``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.connection: Connection | None = None

    def append(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Commit ``rows`` (channel, incoming, received_at) or raise what the
        database raised, nothing of them stored."""
        for attempt in (1, 2):
            connection = self._connected()
            try:
                with connection.begin():
                    fast_writes.insert_rows_on(connection, pushes, rows)
                return
            except DBAPIError as exc:
                self.close()
                # The kept connection died (a restart, an idle timeout): a new one is
                # tried at once, as the pool's pre-ping does for a checked-out one.
                if attempt == 2 or not exc.connection_invalidated:
                    raise
            except Exception:
                self.close()
                raise

    def close(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            with contextlib.suppress(Exception):  # the database may be away: dropped
                connection.close()

    def _connected(self) -> Connection:
        if self.connection is None:
            connection = self.store.engine.connect()
            if not self.store.writers_serialised:
                connection = connection.execution_options(isolation_level="AUTOCOMMIT")
            self.connection = connection
        return self.connection


def backlog(session: Session) -> tuple[int, datetime | None]:
    """(how many pushes wait, when the oldest was received)."""
    count = session.scalar(select(func.count()).select_from(pushes)) or 0
    oldest = session.scalar(select(pushes.c.received_at).order_by(pushes.c.id).limit(1))
    return int(count), oldest


def waiting(session: Session, limit: int) -> Sequence[tuple[int, str, str]]:
    """The oldest ``limit`` pushes: (id, channel, incoming JSON)."""
    query = (
        select(pushes.c.id, pushes.c.channel, pushes.c.incoming).order_by(pushes.c.id).limit(limit)
    )
    return [(row.id, row.channel, row.incoming) for row in session.execute(query)]


def take(session: Session, ids: Sequence[int]) -> None:
    """Delete the pushes ``ids`` in the caller's transaction; :class:`failures.Taken`
    when another daemon has taken any of them (its transaction ingests them: this
    one must roll back). On PostgreSQL rows another transaction holds are skipped,
    not waited for: a daemon never stalls its pass behind another's intake."""
    chosen: Any = pushes.c.id.in_(ids)
    if session.get_bind().dialect.name == "postgresql":
        free = select(pushes.c.id).where(chosen).with_for_update(skip_locked=True)
        chosen = pushes.c.id.in_(free.scalar_subquery())
    deleted = affected(session.execute(delete(pushes).where(chosen)))
    if deleted != len(ids):
        raise failures.Taken(f"{len(ids) - deleted} push(es) taken by another process")
