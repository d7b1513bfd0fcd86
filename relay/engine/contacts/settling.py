"""After a no, nothing leaves: an opt-out waits, bounded, for the sends in flight.

A dispatcher hands a message to its channel outside any transaction, after a
claim or a confirmation that checked the contact; a message claimed a moment
before an opt-out committed can still be handed over afterwards (the claim's
first group goes without a second check, see ``relay.engine.outbox.FRESH``).
So an opt-out, once committed, waits until no message to the contact is
``sending`` under a live lease (each is then recorded sent, or ruled out by the
re-check before its send), at most :data:`SETTLE_SECONDS`, and reports how many
were handed to a provider from its commit on (``in_flight``, as ``relay
cancel`` and ``relay pause`` report theirs). Nothing to the contact is handed
over after it returns but those it reports: a lease that runs out sends
nothing, since a new claim checks the contact first.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from datetime import datetime

from relay.store import contact_work
from relay.store.database import Store

log = logging.getLogger("relay.inbound")

#: How long an opt-out waits for the sends in flight to settle.
SETTLE_SECONDS = 10.0
#: How often it looks.
LOOK_EVERY = 0.02


def settle(
    store: Store,
    contact_id: int,
    since: datetime,
    now: Callable[[], datetime],
    *,
    bound: float = SETTLE_SECONDS,
    monotonic: Callable[[], float] = time.monotonic,
    pause: Callable[[float], None] = time.sleep,
) -> int:
    """Wait until no send to the contact is in flight (at most ``bound`` seconds);
    how many messages to it were handed over, or may still be, since ``since``."""
    deadline = monotonic() + bound
    while True:
        with store.read_transaction() as session:
            busy = contact_work.unsettled_to(session, contact_id, now())
            if not busy or monotonic() >= deadline:
                return contact_work.handed_over_to(session, contact_id, since)
        pause(LOOK_EVERY)


def settle_all(
    store: Store, opted_out: Iterable[tuple[int, datetime]], now: Callable[[], datetime]
) -> int:
    """After a committed inbound opt-out (a STOP, an unsubscribe, a complaint), as
    after ``relay contact opt-out``: wait for each contact's sends in flight before
    the arrival is acknowledged (a poll's next step, ``relay serve``'s answer), so
    nothing leaves after it but what is reported; how many were handed over."""
    total = 0
    for contact_id, since in opted_out:
        in_flight = settle(store, contact_id, since, now)
        if in_flight:
            log.info(
                "contact %s opted out; %s message(s) already handed over", contact_id, in_flight
            )
        total += in_flight
    return total
