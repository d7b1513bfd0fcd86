"""Two processes racing to start a conversation with one contact.

The unique index on the contact slot decides: exactly one start becomes
CREATED, the other QUEUED, whatever the interleaving. Each side has its own
Relay on its own engine (its own connection), in its own thread.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sqlalchemy import event, func, select

from relay.store.models import Contact, EventRow, Instance

ROUNDS = 4
BARRIER_TIMEOUT = 10


def _race(relays: list[Any], contact: str, before: Callable[[], None] | None = None) -> list[Any]:
    def one(relay: Any) -> Any:
        if before is not None:
            before()
        return relay.start(contact, "Confirm the date", ["Ask"])

    with ThreadPoolExecutor(max_workers=len(relays)) as pool:
        futures = [pool.submit(one, relay) for relay in relays]
        return [f.result(timeout=60) for f in futures]


def _hold_after_instance_insert(relay: Any, barrier: threading.Barrier) -> Any:
    """Make ``relay`` wait, inside its start transaction, right after it has
    inserted its instance row and before it claims the contact slot, until
    the other side has got just as far. Returns the listener, to remove;
    ``listener.hits`` counts the inserts it held."""

    def wait(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO INSTANCES"):
            wait.hits += 1  # type: ignore[attr-defined]
            # A broken barrier means the other side is blocked inside its own
            # open transaction (a lock taken earlier in start): still a race.
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait(BARRIER_TIMEOUT)

    wait.hits = 0  # type: ignore[attr-defined]
    event.listen(relay.store.engine, "after_cursor_execute", wait)
    return wait


def _check_one_created_one_queued(relay: Any, results: list[Any], contact: str) -> None:
    assert sorted(v.state for v in results) == ["CREATED", "QUEUED"]
    with relay.store.transaction() as session:
        rows = session.execute(
            select(Instance.state, Instance.contact_slot)
            .join(Contact, Contact.id == Instance.contact_id)
            .where(Contact.address == contact)
        ).all()
        contacts = session.scalar(
            select(func.count()).select_from(Contact).where(Contact.address == contact)
        )
        log = session.scalar(
            select(func.count())
            .select_from(EventRow)
            .where(
                EventRow.instance_id.in_([v.id for v in results]), EventRow.to_state.is_not(None)
            )
        )
    assert contacts == 1
    assert sorted(rows, key=lambda r: r.state) == [
        ("CREATED", rows[0].contact_slot or rows[1].contact_slot),
        ("QUEUED", None),
    ]
    assert log == 3  # start, start, contact_has_active_instance


POSTGRES_ONLY = [pytest.param("postgres", id="postgres", marks=pytest.mark.postgres)]
BOTH = ["sqlite", pytest.param("postgres", id="postgres", marks=pytest.mark.postgres)]


@pytest.mark.parametrize("db_url", POSTGRES_ONLY, indirect=True)
def test_two_open_transactions_starting_one_contact_on_postgres(
    db_url: str, make_relay: Any
) -> None:
    """Both transactions are open with their instance rows inserted before
    either claims the slot; the unique index makes the loser QUEUED."""
    relays = [make_relay(db_url), make_relay(db_url)]
    for round_no in range(ROUNDS):
        contact = f"+1555123{round_no:04d}"
        relays[0].receive(contact, "hello")  # the contact exists; the race is on the slot
        barrier = threading.Barrier(2)
        listeners = [_hold_after_instance_insert(relay, barrier) for relay in relays]
        try:
            results = _race(relays, contact)
        finally:
            for relay, listener in zip(relays, listeners, strict=True):
                event.remove(relay.store.engine, "after_cursor_execute", listener)
        assert barrier.n_waiting == 0
        assert all(listener.hits == 1 for listener in listeners), "the barrier never engaged"
        _check_one_created_one_queued(relays[0], results, contact)


@pytest.mark.parametrize("db_url", BOTH, indirect=True)
def test_two_concurrent_starts_for_a_new_contact(db_url: str, make_relay: Any) -> None:
    """Both sides also race to create the contact itself."""
    relays = [make_relay(db_url), make_relay(db_url)]
    for round_no in range(ROUNDS):
        contact = f"+1555987{round_no:04d}"
        barrier = threading.Barrier(2)
        results = _race(relays, contact, before=lambda b=barrier: b.wait(BARRIER_TIMEOUT))
        _check_one_created_one_queued(relays[0], results, contact)


@pytest.mark.parametrize("db_url", BOTH, indirect=True)
def test_many_concurrent_starts_queue_in_order(db_url: str, make_relay: Any) -> None:
    relays = [make_relay(db_url) for _ in range(4)]
    contact = "+15551110000"
    relays[0].receive(contact, "hello")
    barrier = threading.Barrier(len(relays))
    results = _race(relays, contact, before=lambda: barrier.wait(BARRIER_TIMEOUT))
    assert sorted(v.state for v in results) == ["CREATED", "QUEUED", "QUEUED", "QUEUED"]
    # FIFO: ending the holder each time promotes the queued ones by creation order.
    order = [v.id for v in relays[0].instances(contact=contact)][::-1]
    holder = next(v.id for v in results if v.state == "CREATED")
    queued = [i for i in order if i != holder]
    relays[0].cancel(holder)
    for expected in queued:
        assert relays[0].get(expected).state == "CREATED"
        relays[1].cancel(expected)
