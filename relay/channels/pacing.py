"""Spacing a sender's messages in time (a Twilio number takes so many segments a
second). The pacer computes each send's cost and waits; where the slots are
kept is a ``book`` function: in this process by default, in the store when the
engine hands one over (:mod:`relay.engine.runtime`), so processes share them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

#: Books ``cost`` seconds of a number's time from ``now`` or its next free moment,
#: whichever is later, and returns when the booked slot starts.
Booking = Callable[[str, float, float], float]


class LocalSlots:
    """Slots kept in this process: enough for one sender; the engine swaps in
    slots kept in the store (:mod:`relay.engine.runtime`) so that every process
    sending from one number shares them."""

    def __init__(self) -> None:
        self._free_at: dict[str, float] = {}
        self._lock = threading.Lock()

    def __call__(self, number: str, now: float, cost: float) -> float:
        with self._lock:
            start = max(now, self._free_at.get(number, now))
            self._free_at[number] = start + cost
        return start


class SegmentPacer:
    """Spaces sends from one number to ``per_second`` segments a second (carriers
    queue or drop what comes faster: a US long code takes one segment a second).

    ``book`` decides where the slots are kept; ``clock`` and ``sleep`` are
    injected, so tests never wait for real time.
    """

    def __init__(
        self,
        per_second: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        book: Booking | None = None,
    ) -> None:
        self.per_second = per_second
        self.clock = clock
        self.sleep = sleep
        self.book: Booking = book or LocalSlots()

    def wait(self, number: str, segments: int) -> float:
        """Block until ``number`` may send ``segments`` more; returns the wait."""
        if self.per_second <= 0:
            return 0.0
        now = self.clock()
        delay = self.book(number, now, segments / self.per_second) - now
        if delay > 0:
            self.sleep(delay)
        return max(delay, 0.0)
