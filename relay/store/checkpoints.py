"""SQLite's WAL checkpoints, taken out of the daemon's commits.

In WAL mode SQLite copies the log back into the database file, and syncs the
file, inside whichever commit takes the log past ``wal_autocheckpoint`` pages
(1,000 by default). A daemon writing thousands of rows a second meets that
mark every few commits, and its pulse waits for the copy: 15 % of a pulse's
time in a profile of 2,000 follow-ups (docs/performance-history.md, eighth pass).

So a daemon runs the checkpoints itself, on a thread and a connection of its
own (:class:`Checkpointer`), and raises its writers' mark to a backstop
(:data:`BACKSTOP_PAGES`). The sqlite3 module releases the GIL while SQLite
works, so the copy runs on another core beside the pulse. Its checkpoints are
PASSIVE: they never wait for the writer and never hold it up. Should the log
outgrow the backstop anyway (the thread stalled, a long read pinned an old
snapshot), the writer's own automatic checkpoint takes over as before.

Durability does not change: with ``synchronous=NORMAL`` the log is synced
before each checkpoint, wherever the checkpoint runs.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass

from sqlalchemy import Engine, event

#: The writers' automatic checkpoint mark while a daemon checkpoints (pages of,
#: usually, 4 KiB: about 80 MB of log).
BACKSTOP_PAGES = 20_000


@dataclass(frozen=True)
class Checkpoint:
    """What one PASSIVE checkpoint did: ``busy`` when it could not start (another
    checkpoint ran), the log's frames, and how many of them are in the file now."""

    busy: bool
    log_frames: int
    checkpointed: int


class Checkpointer:
    """PASSIVE checkpoints of one SQLite file on a connection that does nothing else."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def run(self) -> Checkpoint:
        with self._lock:
            if self._connection is None:
                # isolation_level=None: the PRAGMA must not run inside a transaction.
                self._connection = sqlite3.connect(
                    self.path, timeout=0, isolation_level=None, check_same_thread=False
                )
            busy, frames, done = self._connection.execute(
                "PRAGMA wal_checkpoint(PASSIVE)"
            ).fetchone()
        return Checkpoint(busy=bool(busy), log_frames=frames, checkpointed=done)

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


def take_over(engine: Engine) -> Checkpointer | None:
    """Move an SQLite file's checkpoints off ``engine``'s commits; None when there
    is nothing to take over (PostgreSQL, a database in memory).

    Connections opened from now on get the backstop mark; the pool's idle ones
    are closed, so none keeps the default mark.
    """
    if engine.dialect.name != "sqlite":
        return None
    path = engine.url.database
    if not path or path == ":memory:" or path.startswith("file:"):
        return None

    def raise_mark(dbapi_connection: sqlite3.Connection, _record: object) -> None:
        dbapi_connection.execute(f"PRAGMA wal_autocheckpoint={BACKSTOP_PAGES}")

    event.listen(engine, "connect", raise_mark)
    engine.dispose()
    return Checkpointer(path)
