"""A transaction PostgreSQL aborts to break a deadlock is run again (issue 32):
``relay serve``'s store of an inbound reply and another writer (a daemon's turn
commit) lock the same conversation and the channel in opposite orders; the
database kills one; the reply is stored all the same, nothing answers 500."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest
from sqlalchemy import func, select, text

from relay.channels.base import Inbound, Incoming
from relay.store.models import Instance, Message

POSTGRES_ONLY = [pytest.param("postgres", id="postgres", marks=pytest.mark.postgres)]
PHONE = "+15551230001"


def _waiting_on_a_lock(relay: Any) -> bool:
    with relay.store.engine.connect() as conn:
        query = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
        return bool(conn.execute(text(query)).scalar())


@pytest.mark.parametrize("db_url", POSTGRES_ONLY, indirect=True)
def test_an_ingest_the_database_aborts_in_a_deadlock_is_run_again(
    db_url: str, make_relay: Any, caplog: pytest.LogCaptureFixture
) -> None:
    relay = make_relay(db_url)
    other = make_relay(db_url)
    view = relay.start(PHONE, "the delivery", ["Which day?"], channel="console")
    locked, done = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def daemon_like() -> None:
        """Lock the conversation, then (once the ingest waits for it) the channel."""
        try:
            with other.store.transaction() as session:
                session.execute(select(Instance).where(Instance.id == view.id).with_for_update())
                locked.set()
                deadline = time.monotonic() + 20
                while not _waiting_on_a_lock(other) and time.monotonic() < deadline:
                    time.sleep(0.01)
                session.execute(
                    select(func.pg_advisory_xact_lock(func.hashtext("relay.channel:console")))
                )
        except BaseException as exc:  # the database may pick this side instead
            failures.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=daemon_like)
    thread.start()
    assert locked.wait(20)
    reply = Inbound(sender=PHONE, text="Thursday", provider_message_id="dl-1")
    with caplog.at_level(logging.INFO, logger="relay.store"):
        report = relay.ingest("console", Incoming(messages=[reply]))
    thread.join(20)
    assert report.stored == 1
    with relay.store.transaction() as session:
        count = session.scalar(
            select(func.count()).select_from(Message).where(Message.provider_message_id == "dl-1")
        )
    assert count == 1
    # One side was chosen as the victim: either the ingest ran again, or the other lost.
    retried = any("running it again" in r.getMessage() for r in caplog.records)
    assert retried or failures, "no deadlock happened"
