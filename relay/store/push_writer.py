"""``relay serve``'s one writer (:mod:`relay.runner.serve` hands it each verified
request): what the requests pushed, group-committed.

Each verified request hands its row (channel, the :class:`Incoming` as JSON,
the time) to the writer and waits; the writer takes every row queued
meanwhile, stores them in one transaction, then answers each request only
after that commit. So a request is acknowledged only once it is stored; the
server's requests never wait on each other's database locks; and a burst
costs one commit per batch, not one per request. At low load a batch is the
one request there is: nothing waits to fill a batch.

A failure fails every request of its batch with the database's exception (the
app answers 503 + Retry-After for an outage); one that is not transient
(nothing a push stores should cause one: its text is ASCII JSON) is retried
row by row, so that one bad row fails only its own request.

Two forms, one per database (:func:`push_writer`):

- SQLite (:class:`ThreadWriter`): one thread writes, as the file has one write
  lock (a second writer would only wait for it); each batch is one ``BEGIN
  IMMEDIATE`` transaction (:class:`relay.store.pushes.Appender`), its requests
  woken with one ``call_soon_threadsafe`` per batch.
- PostgreSQL (:class:`LoopWriter`): the writer runs on the server's event loop
  itself (:class:`relay.store.pushes.AsyncAppender`): a batch is one prepared
  INSERT on an autocommit connection, one round trip sent with libpq's
  ``PQsendQueryPrepared`` and answered to a reader kept on the socket, and
  while it waits for the commit's WAL flush the loop goes on serving requests. No thread hand-off
  (which on a busy machine costs a scheduling of the writer thread and then
  of the loop, and the two share the GIL). :data:`PG_WRITERS` connections
  commit at once: a batch gathers while another's commit is in flight.

The writers start with the first request and end after :data:`IDLE_SECONDS`
without one, or with their event loop (an app built by a test leaves no
thread or connection behind for long).
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from relay.store import failures
from relay.store.pushes import Appender, AsyncAppender

if TYPE_CHECKING:
    from relay.store.database import Store

log = logging.getLogger("relay.serve")

#: Stores one push (channel, the Incoming as JSON, when) and returns once committed.
StorePush = Callable[[str, str, datetime], Awaitable[None]]

#: The most rows one transaction takes.
MAX_BATCH = 500
#: Seconds a writer waits for a request before it ends.
IDLE_SECONDS = 5.0
#: Connections committing at once on PostgreSQL (on SQLite: one thread).
PG_WRITERS = 2


def push_writer(store: Store) -> StorePush:
    """The ``store_push`` of the writer for ``store``'s database (see the module)."""
    writer = ThreadWriter(store) if store.writers_serialised else LoopWriter(store)
    return writer.store_push


@dataclass(frozen=True, slots=True)
class _Pending:
    row: dict[str, Any]
    loop: asyncio.AbstractEventLoop
    done: asyncio.Future[None]


def _row(channel: str, incoming: str, received_at: datetime) -> dict[str, Any]:
    return {"channel": channel, "incoming": incoming, "received_at": received_at}


def _settle(futures: list[asyncio.Future[None]], error: BaseException | None) -> None:
    for done in futures:
        if done.done():
            continue  # the client went away; the row is stored (or not) all the same
        if error is None:
            done.set_result(None)
        else:
            done.set_exception(error)


def _one_by_one(batch: list[_Pending], exc: BaseException) -> bool:
    """Whether a batch that failed with ``exc`` is to be written again row by row
    (a failure about its data, not the database away; more than one row)."""
    if failures.is_transient(exc) or len(batch) == 1:
        return False
    log.warning("storing %d pushes one by one after %s", len(batch), failures.kind(exc))
    return True


# -- SQLite: one thread --------------------------------------------------------------------


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


class ThreadWriter:
    """SQLite: the one thread that writes what the requests pushed (see the module)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.queue: queue.SimpleQueue[_Pending] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.running = False
        self.appender: Appender | None = None

    async def store_push(self, channel: str, incoming: str, received_at: datetime) -> None:
        """Return once the row is committed; raise what the database raised if not."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self.queue.put(_Pending(_row(channel, incoming, received_at), loop, done))
        self._ensure_running()
        await done

    def _ensure_running(self) -> None:
        with self.lock:
            if not self.running:
                thread = threading.Thread(target=self._run, name="relay-serve-writer")
                thread.daemon = True
                thread.start()
                self.running = True

    def _run(self) -> None:
        while True:
            try:
                first = self.queue.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with self.lock:
                    if self.queue.empty():
                        self.running = False
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
        try:
            self._insert(batch)
        except Exception as exc:
            if not _one_by_one(batch, exc):
                _answer(batch, exc)
                return
            for pending in batch:
                self._write([pending])
            return
        _answer(batch, None)

    def _insert(self, batch: list[_Pending]) -> None:
        if self.appender is None:
            self.appender = Appender(self.store)
        self.appender.append([pending.row for pending in batch])

    def _close(self) -> None:
        appender, self.appender = self.appender, None
        if appender is not None:
            appender.close()


# -- PostgreSQL: on the event loop -----------------------------------------------------------


class LoopWriter:
    """PostgreSQL: the writer on the server's event loop (see the module); one
    :class:`_Flushers` per event loop that pushes (a test may run several)."""

    def __init__(self, store: Store, writers: int = PG_WRITERS) -> None:
        self.store = store
        self.writers = writers
        self.loops: dict[asyncio.AbstractEventLoop, _Flushers] = {}

    async def store_push(self, channel: str, incoming: str, received_at: datetime) -> None:
        """Return once the row is committed; raise what the database raised if not."""
        loop = asyncio.get_running_loop()
        flushers = self.loops.get(loop)
        if flushers is None:
            flushers = self.loops[loop] = _Flushers(self, loop)
        done: asyncio.Future[None] = loop.create_future()
        flushers.push(_Pending(_row(channel, incoming, received_at), loop, done))
        await done


class _Flushers:
    """One event loop's queue and the tasks that write it, each over a connection
    of its own: a task takes everything queued when it wakes, writes it as one
    batch, answers its requests and looks again; it waits idle for a wake-up (one
    per batch, not per request) and ends after :data:`IDLE_SECONDS` of it."""

    def __init__(self, writer: LoopWriter, loop: asyncio.AbstractEventLoop) -> None:
        self.writer = writer
        self.loop = loop
        self.queue: list[_Pending] = []
        self.idle: list[asyncio.Future[bool]] = []
        self.tasks: set[asyncio.Task[None]] = set()
        #: A task was woken (or started) and has not yet taken the queue.
        self.woken = False

    def push(self, pending: _Pending) -> None:
        self.queue.append(pending)
        if self.woken:
            return
        if self.idle:
            self.woken = True
            self.idle.pop().set_result(True)
        elif len(self.tasks) < self.writer.writers:
            self.woken = True
            task = self.loop.create_task(self._flush())
            self.tasks.add(task)  # the loop keeps only a weak reference
            task.add_done_callback(self.tasks.discard)

    async def _flush(self) -> None:
        appender = AsyncAppender(self.writer.store)
        try:
            while self.queue or await self._wait() or self.queue:
                if not self.queue:
                    continue  # woken, but another task took the queue first
                batch, self.queue = self.queue[:MAX_BATCH], self.queue[MAX_BATCH:]
                self.woken = False
                await self._write(appender, batch)
        finally:
            if len(self.tasks) == 1 and not self.queue:  # the last: this loop is forgotten
                self.writer.loops.pop(self.loop, None)
            await appender.close()

    async def _wait(self) -> bool:
        """Wait to be woken: True, or False after :data:`IDLE_SECONDS` without."""
        waiter: asyncio.Future[bool] = self.loop.create_future()
        self.idle.append(waiter)
        timer = self.loop.call_later(IDLE_SECONDS, self._expire, waiter)
        try:
            return await waiter
        finally:
            timer.cancel()
            if waiter in self.idle:  # cancelled with the loop
                self.idle.remove(waiter)

    def _expire(self, waiter: asyncio.Future[bool]) -> None:
        if not waiter.done():
            self.idle.remove(waiter)
            waiter.set_result(False)

    async def _write(self, appender: AsyncAppender, batch: list[_Pending]) -> None:
        futures = [pending.done for pending in batch]
        try:
            await appender.append([pending.row for pending in batch])
        except Exception as exc:
            if not _one_by_one(batch, exc):
                _settle(futures, exc)
                return
            for pending in batch:
                await self._write(appender, [pending])
            return
        except BaseException:  # cancelled with its loop: nobody is told it is stored
            for done in futures:
                done.cancel()
            raise
        _settle(futures, None)
