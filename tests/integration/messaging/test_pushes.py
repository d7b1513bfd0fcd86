"""What ``relay serve`` stores before it answers (the ``pushes`` table) and how the
daemon takes it in: every acknowledged push stored, each taken once, nothing
unreadable left to block the rest. On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import pytest
from sqlalchemy import func, insert, select, text

from relay.channels.base import Inbound, Incoming, Receipt
from relay.core.values import DeliveryStatus, InboundKind
from relay.engine.verbs import incoming as incoming_verbs
from relay.engine.verbs.doctor import notices
from relay.runner.pulse import Pulse, take_all, take_pushes
from relay.store import claims, failures, pushes
from relay.store.push_writer import push_writer
from relay.store.tables import inbound_rejects, messages
from relay.store.tables import pushes as pushes_table

PHONE = "+15551230001"


def count(relay: Any, table: Any) -> int:
    with relay.store.read_transaction() as session:
        return int(session.scalar(select(func.count()).select_from(table)) or 0)


def reply(n: int) -> str:
    return Incoming(messages=[Inbound(PHONE, f"reply {n}", None, f"SM{n}")]).dumps()


def test_an_incoming_survives_its_json_whole() -> None:
    at = datetime(2026, 11, 26, 2, 0, tzinfo=UTC)
    incoming = Incoming(
        messages=[
            Inbound(PHONE, "Thu\x00rsday \ud800", at, "SM1", ("<a@x>", "<b@x>"),
                    InboundKind.AUTO_REPLY, "raw", at + timedelta(days=3), "tok"),
            Inbound("+15551230002", "plain"),
        ],
        receipts=[Receipt("SM9", DeliveryStatus.UNDELIVERED, "30003", True, True, at, "spam")],
    )  # fmt: skip
    text = incoming.dumps()
    assert text.isascii()  # a NUL or a lone surrogate is escaped: the row always stores
    back = Incoming.loads(text)
    assert list(back.messages) == list(incoming.messages)
    assert list(back.receipts) == list(incoming.receipts)


def test_every_acknowledged_push_is_stored(make_relay: Any, db_url: str) -> None:
    relay = make_relay(db_url)
    store_push = push_writer(relay.store)
    now = datetime.now(UTC)

    async def burst() -> None:
        await asyncio.gather(*(store_push("sms", reply(n), now) for n in range(60)))
        await store_push("sms", reply(60), now)

    asyncio.run(burst())
    with relay.store.read_transaction() as session:
        stored = session.scalars(select(pushes_table.c.incoming).order_by(pushes_table.c.id))
        texts = {Incoming.loads(t).messages[0].text for t in stored}
    assert texts == {f"reply {n}" for n in range(61)}


def test_a_row_the_database_refuses_fails_its_request_alone(make_relay: Any, db_url: str) -> None:
    """A batch the database refuses for its data is written again row by row: only
    the bad row's request fails (the app answers it 500), the others are stored."""
    relay = make_relay(db_url)
    store_push = push_writer(relay.store)
    now = datetime.now(UTC)

    async def burst() -> list[Any]:
        calls = [store_push("sms", reply(n), now) for n in range(5)]
        calls.insert(2, store_push("sms", reply(99), None))  # type: ignore[arg-type]
        return await asyncio.gather(*calls, return_exceptions=True)

    outcomes = asyncio.run(burst())
    failed = [o for o in outcomes if isinstance(o, Exception)]
    assert len(failed) == 1 and not failures.is_transient(failed[0])
    assert outcomes.index(failed[0]) == 2
    assert count(relay, pushes_table) == 5


def test_a_batch_the_database_fails_acknowledges_none_of_its_requests(
    make_relay: Any, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database away for a batch: each of its requests gets the error (the app
    answers 503, the provider sends it again), none is told it is stored; the next
    batch is stored once the database answers again."""
    from sqlalchemy.exc import OperationalError

    relay = make_relay(db_url)
    store_push = push_writer(relay.store)
    now = datetime.now(UTC)
    away = OperationalError("INSERT", None, Exception("server closed the connection"))
    appender = pushes.AsyncAppender if db_url.startswith("postgresql") else pushes.Appender

    def refused(self: Any, rows: Any) -> Any:
        raise away

    async def refused_async(self: Any, rows: Any) -> Any:
        raise away

    monkeypatch.setattr(
        appender, "append", refused_async if appender is pushes.AsyncAppender else refused
    )

    async def burst(first: int) -> list[Any]:
        calls = [store_push("sms", reply(n), now) for n in range(first, first + 8)]
        return await asyncio.gather(*calls, return_exceptions=True)

    outcomes = asyncio.run(burst(0))
    assert outcomes == [away] * 8 and failures.is_transient(away)
    assert count(relay, pushes_table) == 0
    monkeypatch.undo()
    assert asyncio.run(burst(8)) == [None] * 8
    assert count(relay, pushes_table) == 8


def test_a_lost_connection_is_replaced_at_the_next_batch(make_relay: Any, db_url: str) -> None:
    """PostgreSQL: the writer's kept connection ended by the server (a restart, an
    idle timeout, an operator) is noticed and the batch written on a new one."""
    if not db_url.startswith("postgresql"):
        pytest.skip("SQLite has no connection to lose")
    relay = make_relay(db_url)
    store_push = push_writer(relay.store)
    now = datetime.now(UTC)

    async def two() -> None:
        await store_push("sms", reply(1), now)
        with relay.store.engine.connect() as other:
            ended = other.execute(text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                " AND query LIKE '%relay_push%'"
            )).scalars().all()  # fmt: skip
        assert ended == [True]
        await store_push("sms", reply(2), now)

    asyncio.run(two())
    assert count(relay, pushes_table) == 2


def test_a_pulse_takes_the_pushes_in_once(make_relay: Any, db_url: str, clock: Any) -> None:
    relay = make_relay(db_url, clock)
    with relay.store.transaction() as session:
        rows = [{"channel": "sms", "incoming": reply(n % 3), "received_at": clock.now()}
                for n in range(5)]  # fmt: skip
        session.execute(insert(pushes_table), rows)
    with relay.store.read_transaction() as session:  # the daemon pulses at once for it
        assert claims.next_due(session, clock.now()) == clock.now()
    report = Pulse(relay, "test").run()
    assert report.pushed == 5 and not report.idle
    assert count(relay, pushes_table) == 0
    assert count(relay, messages) == 3  # a provider's retry is stored once
    assert Pulse(relay, "test").run().pushed == 0


def test_pushes_another_daemon_took_are_not_taken_again(make_relay: Any, db_url: str) -> None:
    relay = make_relay(db_url)
    with relay.store.transaction() as session:
        session.execute(insert(pushes_table), [
            {"channel": "sms", "incoming": reply(n), "received_at": datetime.now(UTC)}
            for n in range(3)
        ])  # fmt: skip
    with relay.store.read_transaction() as session:
        ids = [row[0] for row in pushes.waiting(session, 10)]
    with relay.store.transaction() as session:  # the other daemon, first
        pushes.take(session, ids[:1])
    incoming = Incoming(messages=[Inbound(PHONE, "late", None, "SMlate")])
    with pytest.raises(failures.Taken):
        take = partial(pushes.take, ids=ids)
        incoming_verbs.ingest(relay, "sms", incoming, taking=take)
    assert count(relay, messages) == 0 and count(relay, pushes_table) == 2
    assert take_pushes(relay, 10) == 2 and count(relay, messages) == 2


def test_an_unreadable_push_is_kept_aside_and_the_rest_taken(make_relay: Any, db_url: str) -> None:
    relay = make_relay(db_url)
    with relay.store.transaction() as session:
        session.execute(insert(pushes_table), [
            {"channel": "sms", "incoming": text, "received_at": datetime.now(UTC)}
            for text in (reply(1), '{"messages": [{"no": "sender"}]}', "not json", reply(2))
        ])  # fmt: skip
    assert take_all(relay, 2) == 4
    assert count(relay, pushes_table) == 0
    assert count(relay, messages) == 2
    assert count(relay, inbound_rejects) == 2


def test_pushes_no_daemon_takes_are_a_notice(make_relay: Any, db_url: str, clock: Any) -> None:
    relay = make_relay(db_url, clock)
    with relay.store.transaction() as session:
        row = {"channel": "sms", "incoming": reply(1), "received_at": clock.now()}
        session.execute(insert(pushes_table), [row])
    assert not [n for n in notices(relay) if "webhook" in n.problem]
    clock.advance(timedelta(minutes=3))
    [notice] = [n for n in notices(relay) if "webhook" in n.problem]
    assert notice.problem.startswith("1 webhook(s) stored by relay serve wait for a daemon")
    Pulse(relay, "test").run()
    assert not [n for n in notices(relay) if "webhook" in n.problem]


def test_a_push_another_daemon_holds_is_skipped_not_waited_for(
    make_relay: Any, db_url: str
) -> None:
    """PostgreSQL: a row another daemon's intake has locked (its transaction still
    open) makes this one give up at once rather than wait for that commit."""
    if not db_url.startswith("postgresql"):
        pytest.skip("SQLite has one writer at a time: nothing to skip")
    relay = make_relay(db_url)
    with relay.store.transaction() as session:
        row = {"channel": "sms", "incoming": reply(1), "received_at": datetime.now(UTC)}
        session.execute(insert(pushes_table), [row, row])
    with relay.store.read_transaction() as session:
        ids = [row[0] for row in pushes.waiting(session, 10)]
    with relay.store.engine.connect() as other:
        held = select(pushes_table.c.id).where(pushes_table.c.id == ids[0])
        other.execute(held.with_for_update())
        with pytest.raises(failures.Taken), relay.store.transaction() as session:
            session.execute(text("SET LOCAL lock_timeout = '2s'"))  # a wait fails otherwise
            pushes.take(session, ids)
        other.rollback()
    assert count(relay, pushes_table) == 2


def test_a_downgrade_with_pushes_waiting_is_refused(make_relay: Any, db_url: str) -> None:
    from alembic.script import ScriptDirectory

    from relay.core.errors import RelayError
    from relay.store import migrate
    from relay.store.database import HEAD_REVISION

    relay = make_relay(db_url)
    with relay.store.transaction() as session:
        row = {"channel": "sms", "incoming": reply(1), "received_at": datetime.now(UTC)}
        session.execute(insert(pushes_table), [row])
    script = ScriptDirectory.from_config(migrate.alembic_config(relay.store))
    [adding] = [r for r in script.walk_revisions() if r.path.endswith("_pushes.py")]
    before = adding.down_revision
    assert isinstance(before, str)
    with pytest.raises(RelayError, match="1 webhook"):
        migrate.downgrade(relay.store, before)
    assert relay.store.revision() == HEAD_REVISION and count(relay, pushes_table) == 1
    take_all(relay, 10)
    migrate.downgrade(relay.store, before)
    assert relay.store.revision() == before
    migrate.upgrade(relay.store, "head")
