"""After a no, nothing leaves (issue 32): an opt-out that races a delivery returns
only once the send already under way has settled, reports it, and nothing to the
contact is handed to a channel after it returns; on SQLite and PostgreSQL.

The race is made, not hoped for: the channel's send blocks (inside the
dispatcher's unchecked first group, straight after the turn commit that leased
the message) until the opt-out has been issued from another Relay on its own
connection."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from relay.engine.contacts import settling
from relay.runner.pulse import Pulse
from relay.testing import PHONE, RecordingChannel

SETTINGS = {"channels.test.type": "test", "defaults.channel": "test"}


class Died(BaseException):
    """The process ends in the middle of a send (nothing catches it, as a SIGKILL)."""


def _race_a_held_send(
    make_relay: Any,
    db_url: str,
    clock: Any,
    relay_channel: RecordingChannel,
    no: Callable[[Any], Any],
) -> list[Any]:
    """A daemon's send to the contact blocks in the channel; ``no`` (given another
    Relay on its own connection) runs meanwhile and must not return until that send
    settled; and nothing more reaches the channel afterwards. What ``no`` returned."""
    relay = make_relay(db_url, clock, **SETTINGS)
    other = make_relay(db_url, clock, **SETTINGS)
    relay.start(PHONE, "the delivery of order 1042", ["Which day?", "Which number?"])
    order: list[str] = []
    entered, release = threading.Event(), threading.Event()

    def hold(message: Any) -> None:
        entered.set()
        assert release.wait(20)
        order.append("handed over")

    relay_channel.before_send = hold
    daemon = threading.Thread(target=lambda: Pulse(relay, "d1").run())
    daemon.start()
    assert entered.wait(20), "the pulse never sent"
    result: list[Any] = []

    def say_no() -> None:
        result.append(no(other))
        order.append("no acknowledged")

    command = threading.Thread(target=say_no)
    command.start()
    command.join(timeout=1.0)
    assert command.is_alive(), "the no was acknowledged while a send to the contact was under way"
    release.set()
    daemon.join(timeout=20)
    command.join(timeout=20)
    assert order == ["handed over", "no acknowledged"]
    assert len(relay_channel.delivered) == 1

    # Nothing more to the contact, however long the daemon goes on.
    relay_channel.before_send = None
    for _ in range(3):
        clock.advance(timedelta(hours=1))
        Pulse(relay, "d1").run()
    assert len(relay_channel.attempts) == 1
    return result


def test_an_opt_out_waits_for_the_send_in_flight_and_nothing_leaves_after_it(
    make_relay: Any, db_url: str, clock: Any, relay_channel: RecordingChannel
) -> None:
    (view,) = _race_a_held_send(
        make_relay, db_url, clock, relay_channel,
        lambda other: other.opt_out(PHONE, reason="asked by phone"),
    )  # fmt: skip
    assert view.opted_out_at is not None and view.in_flight == 1


def _stop_by_poll(relay: Any, clock: Any) -> int:
    """A STOP read from the channel, as a poll or ``relay serve`` stores it."""
    from relay.channels.base import Inbound, Incoming

    stop = Inbound(PHONE, "STOP", clock.now(), provider_message_id="in-stop-1")
    return len(relay.ingest("test", Incoming(messages=[stop])).opted_out)


def _stop_by_receive(relay: Any, clock: Any) -> int:
    """A STOP handed in by ``relay receive``."""
    relay.receive(PHONE, "Stop texting me please")
    return 1


@pytest.mark.parametrize("arrive", [_stop_by_poll, _stop_by_receive], ids=["poll", "receive"])
def test_an_inbound_stop_is_acknowledged_only_once_the_send_in_flight_settled(
    make_relay: Any,
    db_url: str,
    clock: Any,
    relay_channel: RecordingChannel,
    arrive: Callable[[Any, Any], int],
) -> None:
    """The same promise as ``relay contact opt-out``: a STOP that arrives while a
    message to the contact is being handed over (the dispatcher's unchecked
    first group) is acknowledged (the poll, the request, the command returns)
    only after that send settled, and nothing leaves after it."""
    stored = _race_a_held_send(
        make_relay, db_url, clock, relay_channel, lambda other: arrive(other, clock)
    )
    assert stored == [1]
    assert make_relay(db_url, clock, **SETTINGS).contact(PHONE).opted_out_at is not None


def test_an_opt_out_with_nothing_in_flight_returns_at_once_and_reports_none(
    make_relay: Any, db_url: str, clock: Any, relay_channel: RecordingChannel
) -> None:
    relay = make_relay(db_url, clock, **SETTINGS)
    relay.start(PHONE, "the delivery of order 1042", ["Which day?"])
    Pulse(relay, "d1").run()
    assert len(relay_channel.delivered) == 1
    clock.advance(timedelta(seconds=1))
    assert relay.opt_out(PHONE).in_flight == 0  # delivered before, not in flight


def test_the_wait_is_bounded_and_a_send_still_under_way_is_reported(
    make_relay: Any, db_url: str, clock: Any, relay_channel: RecordingChannel
) -> None:
    """A send that hangs (or a daemon that died mid-send) does not hold the
    command for ever: after the bound it returns, reporting that message."""
    relay = make_relay(db_url, clock, **SETTINGS)
    relay.start(PHONE, "the delivery of order 1042", ["Which day?"])
    relay_channel.fail_always = Died()  # type: ignore[assignment]
    with contextlib.suppress(Died):  # "died" in the send: it stays sending
        Pulse(relay, "d1").run()
    relay_channel.fail_always = None
    with relay.store.transaction() as session:
        from relay.store import contact_work, contacts

        contact = contacts.by_address(session, PHONE)
        assert contact is not None
        contact_id = contact.id
        assert contact_work.unsettled_to(session, contact_id, clock.now()) == 1
    ticks = iter(range(1000))
    looked: list[float] = []
    count = settling.settle(
        relay.store,
        contact_id,
        clock.now(),
        clock.now,
        bound=3,
        monotonic=lambda: float(next(ticks)),
        pause=looked.append,
    )
    assert count == 1 and len(looked) == 2  # looked at 1 and 2; at 3 the bound


POSTGRES_ONLY = [pytest.param("postgres", id="postgres", marks=pytest.mark.postgres)]


def _someone_waits_on_a_lock(relay: Any) -> bool:
    from sqlalchemy import text

    with relay.store.engine.connect() as conn:
        query = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
        return bool(conn.execute(text(query)).scalar())


@pytest.mark.parametrize("db_url", POSTGRES_ONLY, indirect=True)
def test_an_opt_out_racing_the_claim_of_a_farewell_waits_for_its_send(
    make_relay: Any,
    db_url: str,
    clock: Any,
    relay_channel: RecordingChannel,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found by the chaos run: a completed conversation's farewell (its conversation
    is not locked by the opt-out) claimed while the opt-out ran. The opt-out's
    UPDATE to ``blocked`` waited for the claim's commit, then overwrote its
    ``sending``; the opt-out saw nothing in flight and returned, and the dispatcher
    sent the farewell after it. Now the opt-out locks the queued rows and re-reads
    them: the farewell is ``sending``, and the opt-out waits for it and reports it."""
    from sqlalchemy import select

    from relay.channels.base import ChannelError
    from relay.store import claims
    from relay.store.models import Message

    relay = make_relay(db_url, clock, **SETTINGS, **{"outbox.backoff": "30s"})
    operator = make_relay(db_url, clock, **SETTINGS)
    view = relay.start(PHONE, "the delivery of order 1042", ["Which day?"])
    Pulse(relay, "d1").run()
    relay.receive(PHONE, "Thursday works")
    relay_channel.failures = [ChannelError("busy")]  # the farewell waits out a backoff
    Pulse(relay, "d1").run()
    assert relay.get(view.id).state == "COMPLETED"
    with relay.store.transaction() as session:
        waiting = session.scalars(select(Message).where(Message.status == "queued")).all()
        assert len(waiting) == 1
    clock.advance(timedelta(minutes=5))

    claimed, release, returned = threading.Event(), threading.Event(), threading.Event()
    real_claim = claims.claim_outbox

    def claim_and_hold(*args: Any, **kwargs: Any) -> Any:
        rows = real_claim(*args, **kwargs)
        if rows and not claimed.is_set():
            claimed.set()  # inside the claim's transaction: the row locked and leased
            assert release.wait(20)
        return rows

    monkeypatch.setattr(claims, "claim_outbox", claim_and_hold)
    order: list[str] = []

    def send_after(message: Any) -> None:
        returned.wait(3)  # the opt-out must not return meanwhile (it would, unfixed)
        order.append("handed over")

    relay_channel.before_send = send_after
    daemon = threading.Thread(target=lambda: Pulse(relay, "d1").run())
    daemon.start()
    try:
        assert claimed.wait(20), "the pulse never claimed the farewell"
        result: list[Any] = []

        def opt_out() -> None:
            result.append(operator.opt_out(PHONE))
            order.append("opt-out returned")
            returned.set()

        command = threading.Thread(target=opt_out)
        command.start()
        deadline = time.monotonic() + 20
        while not _someone_waits_on_a_lock(relay) and time.monotonic() < deadline:
            time.sleep(0.01)
        release.set()
        daemon.join(20)
        command.join(20)
    finally:
        release.set()
    assert order == ["handed over", "opt-out returned"]
    assert result[0].in_flight == 1
