"""Send pacing shared by every process on the store.

A Twilio number takes so many segments a second (one, for a US long code).
The channel spaces its own sends (:class:`relay.channels.pacing.SegmentPacer`),
but two daemons, or a daemon and ``relay send``, on one number would each
keep their own count and together send too fast. So the engine hands such a
channel slots kept in the store (``send_slots``): each send books its time in
one atomic ``UPDATE ... RETURNING`` (:func:`relay.store.pacing.book`) and waits
until its slot starts. Times are the relay clock's, in seconds since the
epoch, which every process agrees on (a monotonic clock is per process).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from relay.store import pacing

if TYPE_CHECKING:
    from relay.engine.runtime import Runtime

MICRO = 1_000_000


class StoreSlots:
    """The ``book`` of a :class:`SegmentPacer`, kept in the store."""

    def __init__(self, relay: Runtime, channel: str) -> None:
        self.relay = relay
        self.channel = channel

    def __call__(self, number: str, now: float, cost: float) -> float:
        with self.relay.store.transaction() as session:
            start = pacing.book(
                session, self.channel, number, round(now * MICRO), round(cost * MICRO)
            )
        return start / MICRO


def share_pacing(relay: Runtime, name: str, channel: Any) -> None:
    """Give ``channel`` store-kept send slots when it paces its sends (``pace_with``)."""
    pace = getattr(channel, "pace_with", None)
    if callable(pace):
        pace(StoreSlots(relay, name), lambda: relay.now().timestamp(), sleeper(relay))


def sleeper(relay: Runtime) -> Callable[[float], None]:
    """The relay clock's ``sleep`` when it has one (a test's clock moves itself on
    instead of waiting), else :func:`time.sleep`."""
    sleep = getattr(relay.clock, "sleep", None)
    return sleep if callable(sleep) else time.sleep
