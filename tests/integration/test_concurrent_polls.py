"""Two daemons polling one channel store each message once (found by the crash-and-race
harness: on PostgreSQL with three daemons, 14 of 107 inbox lines were stored twice).

Both pollers read the same lines from the same stored position. De-duplication by
provider id only works if the second sees what the first stored: under READ
COMMITTED it does not see the first's uncommitted rows, so both used to insert. Now
the second waits for the first (``arrivals.lock_channel``) and then finds its rows.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from sqlalchemy import func, select, text

from relay.channels.base import Inbound, Incoming
from relay.engine.contacts.addresses import address_for
from relay.engine.inbound import ingest as inbound
from relay.store import arrivals
from relay.store.models import Message
from relay.testing import wait_until

POSTGRES = pytest.mark.parametrize(
    "db_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)
LINES = Incoming(
    messages=[
        Inbound("+15551230001", f"answer {n}", provider_message_id=f"line-{n}") for n in (1, 2)
    ],
    cursor="200",
)


def _stored(relay: Any) -> int:
    with relay.store.transaction() as session:
        return int(
            session.scalar(
                select(func.count()).select_from(Message).where(Message.direction == "inbound")
            )
            or 0
        )


def _waiting_for_a_lock(relay: Any) -> bool:
    with relay.store.engine.connect() as conn:
        query = "SELECT count(*) FROM pg_locks WHERE NOT granted"
        return bool(conn.execute(text(query)).scalar())


@POSTGRES
def test_a_second_poller_of_the_same_lines_waits_and_stores_nothing_twice(
    make_relay: Callable[..., Any], db_url: str
) -> None:
    first, second, observer = (make_relay(db_url) for _ in range(3))
    first.start("+15551230001", "Confirm the date", ["Which day?"])
    done: list[Any] = []
    with first.store.transaction() as session:
        # The first poller is storing the lines (uncommitted) when the second, which
        # read the same lines from the same position, stores them too.
        arrivals.lock_channel(session, "console")
        inbound.ingest(session, "console", LINES, first.now(), resolve=partial(address_for, first))
        racer = threading.Thread(
            target=lambda: done.append(second.ingest("console", LINES, read_from=None))
        )
        racer.start()
        wait_until(lambda: done or _waiting_for_a_lock(observer), timeout=20)
    racer.join(timeout=30)

    assert _stored(observer) == 2
    assert done[0].stored == 0 and done[0].duplicates == 2
