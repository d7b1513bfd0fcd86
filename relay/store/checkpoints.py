"""SQLite's WAL checkpoints on a thread of their own, for the daemon.

In WAL mode a commit appends pages to the ``-wal`` file; a checkpoint copies
them back into the database file and syncs it. By default SQLite runs one inside
the ``COMMIT`` that takes the log past 1,000 pages, so the daemon's pulse thread
stopped every few batches to copy and fsync: about a tenth of a pulse's time
with 10,000 follow-ups due (``docs/performance.md``). SQLite's documentation
suggests the alternative used here: turn the automatic checkpoint off on the
connections that write, and checkpoint from another thread. The sqlite3 driver
releases the GIL while SQLite works, so the copy and the fsync run beside the
pulse, on the other core.

The thread checkpoints as soon as a write commits (commits made meanwhile wake
it once more), with ``PASSIVE``: it never waits for, or blocks, a reader or a
writer. SQLite starts the log over only when a writer finds it copied in full;
under a steady stream of commits each checkpoint can end a few frames behind, and
the log would grow without end. Above :data:`RESTART_ABOVE` pages the thread
therefore asks for a ``RESTART`` checkpoint, which holds new writers back while
it copies the little that is left and the readers move on, so that the next
commit writes at the start of the log again.

Nothing about durability changes: a commit is in the WAL either way
(``synchronous=NORMAL``). Only the daemon does this; every other
process (the CLI, the API in a program) keeps SQLite's automatic checkpoint, and
any of them checkpoints a log the daemon left behind.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.exc import SQLAlchemyError

from relay.store.database import READ_ONLY_OPTION

log = logging.getLogger("relay.store")

#: A log above this many pages is started over (about 8 MB of 4 KiB pages).
RESTART_ABOVE = 2_000


class BackgroundCheckpoints:
    """Checkpoints a SQLite database's WAL after writes, on its own thread.

    :meth:`start` turns SQLite's automatic checkpoint off for the engine's
    connections and starts the thread; :meth:`stop` checkpoints what is left and
    gives the engine's connections back their automatic checkpoint.
    """

    def __init__(self, engine: Engine, *, restart_above: int = RESTART_ABOVE) -> None:
        self.engine = engine
        self.restart_above = restart_above
        self._wrote = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._failure: str | None = None
        #: Checkpoints run (by the thread or :meth:`checkpoint`); tests wait on it.
        self.done = threading.Condition()
        self.count = 0

    @staticmethod
    def applies(engine: Engine) -> bool:
        """A SQLite database file in WAL mode (not ``:memory:``, not read-only)."""
        if engine.dialect.name != "sqlite":
            return False
        connection = engine.raw_connection()
        try:
            row = connection.cursor().execute("PRAGMA journal_mode").fetchone()
        finally:
            connection.close()
        return bool(row) and str(row[0]).lower() == "wal"

    def start(self) -> None:
        if self._thread is not None:
            return
        event.listen(self.engine, "connect", _manual)
        event.listen(self.engine, "commit", self._on_commit)
        # Connections already pooled were made with the automatic checkpoint on.
        self.engine.dispose()
        self._thread = threading.Thread(target=self._run, name="relay-checkpoint", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Checkpoint what the last commits left, and stop the thread."""
        if self._thread is None:
            return
        self._stopping.set()
        self._wrote.set()
        self._thread.join()
        self._thread = None
        event.remove(self.engine, "commit", self._on_commit)
        event.remove(self.engine, "connect", _manual)
        self.engine.dispose()
        self.checkpoint()

    def checkpoint(self) -> tuple[int, int, int] | None:
        """One ``PASSIVE`` checkpoint (and a ``RESTART`` if the log is above
        ``restart_above`` pages): SQLite's (busy, pages in the log, pages copied),
        or None if it failed (logged once per distinct failure; the next commit
        tries again)."""
        try:
            connection = self.engine.raw_connection()
            try:
                cursor = connection.cursor()
                row = cursor.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                if row and int(row[1]) > self.restart_above:
                    row = cursor.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()
            finally:
                connection.close()
        except (sqlite3.Error, SQLAlchemyError) as exc:
            message = str(exc).splitlines()[0]
            if message != self._failure:
                log.warning("WAL checkpoint failed (retried after the next commit): %s", message)
            self._failure = message
            return None
        self._failure = None
        with self.done:
            self.count += 1
            self.done.notify_all()
        return (int(row[0]), int(row[1]), int(row[2])) if row else None

    def _on_commit(self, connection: Any) -> None:
        if not connection.get_execution_options().get(READ_ONLY_OPTION):
            self._wrote.set()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wrote.wait()
            if self._stopping.is_set():
                return
            self._wrote.clear()
            self.checkpoint()


def _manual(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.execute("PRAGMA wal_autocheckpoint=0")


def started(engine: Engine) -> BackgroundCheckpoints | None:
    """Checkpoint ``engine``'s database in the background, if it is one that has
    a WAL to checkpoint; the caller stops what this returns."""
    if not BackgroundCheckpoints.applies(engine):
        return None
    checkpoints = BackgroundCheckpoints(engine)
    checkpoints.start()
    return checkpoints
