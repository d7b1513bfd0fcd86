"""The one writer of ``relay serve``: what the requests pushed, group-committed.

Each verified request hands its row (channel, the :class:`Incoming` as JSON,
the time) to a queue and waits; one thread owns the writing, takes every row
queued meanwhile and INSERTs them in one transaction
(:func:`relay.store.fast_writes.insert_rows`), then answers each request only
after that commit. So a request is acknowledged only once it is stored; the
server's requests never wait on each other's database locks (on SQLite every
``BEGIN IMMEDIATE`` of the thread pool queued on the file's one write lock);
and a burst costs one commit per batch, not one per request. At low load a
batch is the one request there is: nothing waits to fill a batch.

A failure fails every request of its batch with the database's exception (the
app answers 503 + Retry-After for an outage, as before); one that is not
transient (nothing a push stores should cause one: its text is ASCII JSON) is
retried row by row, so that one bad row fails only its own request.

The thread starts with the first request and ends after :data:`IDLE_SECONDS`
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
#: Seconds the writer waits for a request before its thread ends.
IDLE_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class _Pending:
    row: dict[str, Any]
    loop: asyncio.AbstractEventLoop
    done: asyncio.Future[None]

    def settle(self, error: BaseException | None) -> None:
        self.loop.call_soon_threadsafe(_settle, self.done, error)


def _settle(done: asyncio.Future[None], error: BaseException | None) -> None:
    if done.cancelled():
        return  # the client went away; the row is stored (or not) all the same
    if error is None:
        done.set_result(None)
    else:
        done.set_exception(error)


class PushWriter:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.queue: queue.SimpleQueue[_Pending] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None

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
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="relay-serve-writer")
                self.thread.daemon = True
                self.thread.start()

    def _run(self) -> None:
        while True:
            try:
                first = self.queue.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with self.lock:
                    if self.queue.empty():
                        self.thread = None
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
                for pending in batch:
                    pending.settle(exc)
                return
            log.warning("storing %d pushes one by one after %s", len(batch), failures.kind(exc))
            for pending in batch:
                self._write([pending])
            return
        for pending in batch:
            pending.settle(None)

    def _insert(self, batch: list[_Pending]) -> None:
        from relay.store import fast_writes
        from relay.store.tables import pushes

        with self.store.transaction() as session:
            fast_writes.insert_rows(session, pushes, [pending.row for pending in batch])
