"""The pushes ``relay serve`` stores and the daemon takes: appended by the
server's writer (:mod:`relay.store.push_writer`), read in order, and deleted
by the transaction that ingests them (``relay.engine.verbs.incoming.ingest(taking=...)``)."""

from __future__ import annotations

import asyncio
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

#: A push row's keys, the columns of a batch.
KEYS = ("channel", "incoming", "received_at")


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


#: The batch on PostgreSQL: an array per column, unnested in order, prepared once
#: per connection (:class:`AsyncAppender`).
PG_STATEMENT = "relay_push"
PG_INSERT = (
    "INSERT INTO pushes (channel, incoming, received_at) SELECT v0, v1, v2"
    " FROM unnest($1::text[], $2::text[], $3::timestamptz[])"
    " WITH ORDINALITY AS v(v0, v1, v2, n) ORDER BY n"
)


class AsyncAppender:
    """PostgreSQL: :class:`Appender` on the server's event loop. A connection of
    its own (psycopg's ``AsyncConnection`` in autocommit, for the connecting and
    the closing) on which a batch is sent as libpq's ``PQsendQueryPrepared`` of
    :data:`PG_INSERT` (binary arrays, one round trip, committed by itself) and its
    answer read by one reader callback kept on the socket: a third of the CPU of
    psycopg's ``execute`` (its cursor, its query conversion, a reader added and
    removed per wait), which the server's one core pays per batch. Errors are
    raised as SQLAlchemy's (``DBAPIError``; ``connection_invalidated`` when the
    connection is lost), so that :mod:`relay.store.failures` reads them as it
    reads the rest."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.connection: Any = None
        self.transformer: Any = None
        self.lost: BaseException | None = None
        self.answer: asyncio.Future[Any] | None = None
        self.results: list[Any] = []
        self.socket = -1

    async def append(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Commit ``rows`` or raise what the database raised, nothing of them stored."""
        import psycopg

        columns = [[row[key] for row in rows] for key in KEYS]
        for attempt in (1, 2):
            if self.lost is not None:
                await self.close()
            kept = self.connection is not None
            try:
                await self._execute(columns)
                return
            except psycopg.Error as exc:
                lost = self.connection is None or self.lost is not None
                if lost:
                    await self.close()
                # The kept connection died (a restart, an idle timeout): a new one is
                # tried at once, as the pool's pre-ping does for a checked-out one.
                if attempt == 2 or not (kept and lost):
                    raise self._wrapped(exc, lost) from exc

    async def close(self) -> None:
        connection, self.connection = self.connection, None
        self.lost = None
        if connection is not None:
            with contextlib.suppress(Exception):  # the database may be away: dropped
                asyncio.get_running_loop().remove_reader(self.socket)
            with contextlib.suppress(Exception):
                await connection.close()

    async def _execute(self, columns: list[list[Any]]) -> None:
        from psycopg import errors, pq
        from psycopg.adapt import PyFormat

        if self.connection is None:
            await self._connect()
        pgconn = self.connection.pgconn
        params = self.transformer.dump_sequence(columns, (PyFormat.BINARY,) * len(columns))
        # As dumped: binary arrays, or text where a column had no value to type it by.
        formats = self.transformer.formats
        pgconn.send_query_prepared(PG_STATEMENT.encode(), params, param_formats=formats)
        while pgconn.flush():  # a big batch: the rest once the socket takes more
            await self._writable()
        self.answer = asyncio.get_running_loop().create_future()
        result = await self.answer
        if result.status != pq.ExecStatus.COMMAND_OK:
            raise errors.error_from_result(result, self.connection.info.encoding)

    async def _writable(self) -> None:
        loop = asyncio.get_running_loop()
        writable: asyncio.Future[None] = loop.create_future()
        loop.add_writer(self.socket, _settle, writable)
        try:
            await writable
        finally:
            loop.remove_writer(self.socket)

    def _readable(self) -> None:
        """The socket's reader: the answer to the batch in flight, or the connection
        found lost (also between batches: the next batch then connects anew)."""
        import psycopg

        pgconn = self.connection.pgconn
        try:
            pgconn.consume_input()
            while not pgconn.is_busy():
                result = pgconn.get_result()
                if result is None:
                    break
                self.results.append(result)
        except psycopg.Error as exc:
            self.lost = exc
            asyncio.get_running_loop().remove_reader(self.socket)
        answer = self.answer
        if answer is None or answer.done():
            self.results.clear()  # nothing asked (a notice, a goodbye): no batch's answer
            return
        if self.lost is not None:
            answer.set_exception(self.lost)
        elif self.results and not pgconn.is_busy():
            self.answer, results, self.results = None, self.results, []
            answer.set_result(results[0])

    async def _connect(self) -> None:
        import psycopg
        from psycopg.adapt import Transformer

        engine = self.store.engine
        args, kwargs = engine.dialect.create_connect_args(engine.url)
        connection = await psycopg.AsyncConnection.connect(*args, **kwargs, autocommit=True)
        try:
            await connection.execute(f"PREPARE {PG_STATEMENT} AS {PG_INSERT}")
        except BaseException:
            await connection.close()
            raise
        self.transformer = Transformer(connection)
        self.connection, self.lost, self.results = connection, None, []
        self.socket = connection.pgconn.socket  # kept: a lost connection has none to ask
        asyncio.get_running_loop().add_reader(self.socket, self._readable)

    def _wrapped(self, exc: Exception, lost: bool) -> BaseException:
        import psycopg

        dialect = self.store.engine.dialect
        return DBAPIError.instance(
            PG_INSERT, None, exc, psycopg.Error, connection_invalidated=lost, dialect=dialect
        )


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():  # the callback may run again before it is removed
        future.set_result(None)


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
