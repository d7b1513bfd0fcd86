"""Test doubles that ship with relay, for relay's tests and for users' own.

``FakeClock`` is a settable clock: tests move time instead of sleeping.
``wait_until`` is for the few tests and benchmarks that watch a real process
(a daemon in a subprocess), where only polling with a deadline can tell.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from relay.core.clock import ensure_utc


class FakeClock:
    """A clock that only moves when told to. Thread-safe."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
        if self._now.tzinfo is None:
            raise ValueError("FakeClock needs a timezone-aware start")
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, delta: timedelta | float) -> datetime:
        step = delta if isinstance(delta, timedelta) else timedelta(seconds=delta)
        with self._lock:
            self._now += step
            return self._now

    def sleep(self, seconds: float) -> None:
        """What code that waits (send pacing) calls on this clock: it moves the
        clock on instead of waiting."""
        self.advance(max(seconds, 0.0))

    def set(self, moment: datetime) -> None:
        if moment.tzinfo is None:
            raise ValueError("FakeClock.set needs a timezone-aware datetime")
        with self._lock:
            self._now = ensure_utc(moment)


T = TypeVar("T")


def wait_until(check: Callable[[], T], timeout: float = 30.0, every: float = 0.05) -> T:
    """Poll ``check`` until it returns something truthy; raise after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"still not true after {timeout}s: {check}")
        time.sleep(every)
