"""The one writer of ``relay serve``: what the requests pushed, group-committed.

Each verified request hands its row (channel, the :class:`Incoming` as JSON,
the time) to a queue and waits; one thread owns the writing, takes every row
queued meanwhile and INSERTs them in one transaction
(:class:`relay.store.pushes.Appender`), then answers each request only after
that commit. So a request is acknowledged only once it is stored; the
server's requests never wait on each other's database locks (on SQLite every
``BEGIN IMMEDIATE`` of the thread pool queued on the file's one write lock);
and a burst costs one commit per batch, not one per request. At low load a
batch is the one request there is: nothing waits to fill a batch.

A failure fails every request of its batch with the database's exception (the
app answers 503 + Retry-After for an outage, as before); one that is not
transient (nothing a push stores should cause one: its text is ASCII JSON) is
retried row by row, so that one bad row fails only its own request.

On SQLite one thread writes: the file has one write lock, so a second writer
would only wait for it. On PostgreSQL, where a commit waits for the WAL to
reach the disk and INSERTs into ``pushes`` never wait on each other,
:data:`PG_WRITERS` threads each commit a batch at once, so a commit's flush
does not hold back the requests that arrive meanwhile; there a batch is one
INSERT on an autocommit connection: one round trip, no BEGIN or COMMIT.

The threads start with the first request and end after :data:`IDLE_SECONDS`
without one (an app built by a test leaves no thread behind for long).
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from relay.store.database import Store

log = logging.getLogger("relay.serve")

#: The most rows one transaction takes.
MAX_BATCH = 500
#: Seconds a writer waits for a request before its thread ends.
IDLE_SECONDS = 5.0
#: Writer threads on PostgreSQL (on SQLite: one).
PG_WRITERS = 2


@dataclass(frozen=True, slots=True)
class _Pending:
    row: dict[str, Any]
    loop: asyncio.AbstractEventLoop
    done: asyncio.Future[None]


def _answer(batch: list[_Pending], error: BaseException | None) -> None:
    """Settle the batch's futures, one hand-off to each event loop (not one per
    request: each wakes the loop with a write to its self-pipe)."""
    by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
    for pending in batch:
        by_loop.setdefault(pending.loop, []).append(pending.done)
    for loop, futures in by_loop.items():
        try:
            loop.call_soon_threadsafe(_settle, futures, error)
        except RuntimeError:  # that loop is closed: nobody waits for these answers
            log.debug("%d push(es) answered to a closed event loop", len(futures))


def _settle(futures: list[asyncio.Future[None]], error: BaseException | None) -> None:
    for done in futures:
        if done.cancelled():
            continue  # the client went away; the row is stored (or not) all the same
        if error is None:
            done.set_result(None)
        else:
            done.set_exception(error)


class PushWriter:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.queue: queue.SimpleQueue[_Pending] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.writers = 1 if store.writers_serialised else PG_WRITERS
        self.running = 0
        self.local = threading.local()

    async def store_push(self, channel: str, incoming: str, received_at: datetime) -> None:
        """Return once the row is committed; raise what the database raised if not."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        row = {"channel": channel, "incoming": incoming, "received_at": received_at}
        self.queue.put(_Pending(row, loop, done))
        self._ensure_running()
        await done

    def _ensure_running(self) -> None:
        with self.lock:
            while self.running < self.writers:
                thread = threading.Thread(target=self._run, name="relay-serve-writer")
                thread.daemon = True
                thread.start()
                self.running += 1

    def _run(self) -> None:
        while True:
            try:
                first = self.queue.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with self.lock:
                    if self.queue.empty():
                        self.running -= 1
                        self._close()
                        return
                continue
            batch = [first]
            while len(batch) < MAX_BATCH:
                try:
                    batch.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            self._write(batch)

    def _write(self, batch: list[_Pending]) -> None:
        from relay.store import failures

        try:
            self._insert(batch)
        except Exception as exc:
            if failures.is_transient(exc) or len(batch) == 1:
                _answer(batch, exc)
                return
            log.warning("storing %d pushes one by one after %s", len(batch), failures.kind(exc))
            for pending in batch:
                self._write([pending])
            return
        _answer(batch, None)

    def _insert(self, batch: list[_Pending]) -> None:
        from relay.store.pushes import Appender

        appender: Appender | None = getattr(self.local, "appender", None)
        if appender is None:
            appender = self.local.appender = Appender(self.store)
        appender.append([pending.row for pending in batch])

    def _close(self) -> None:
        appender = getattr(self.local, "appender", None)
        self.local.appender = None
        if appender is not None:
            appender.close()
