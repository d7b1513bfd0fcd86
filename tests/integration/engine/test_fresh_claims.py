"""A delivery's first group goes out on its fresh claim; later groups, and on
PostgreSQL the messages of conversations another transaction held, are confirmed.

A SQLite claim screens and leases its rows holding the database's write lock; a
PostgreSQL claim locks the conversations it can before screening (skipping busy
ones rather than waiting, as it holds message locks already). Either way no pause
or cancel of those conversations commits between the screen and the claim's
commit, so the first group is sent without a second, confirming transaction.
Groups sent after other sends took their time are confirmed again: an opt-out
recorded meanwhile stops them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from backends import POSTGRES_ONLY
from sqlalchemy import event, select

from relay.channels.base import Outbound
from relay.core.turns import Action
from relay.engine.outbox.dispatcher import Dispatcher
from relay.engine.runtime import Channels
from relay.engine.turns.runner import TurnRunner
from relay.store.models import Instance
from relay.testing import Harness, RecordingChannel, ScriptAgent

SETTINGS = {"agent.backend": "script", "channels.test.type": "test", "defaults.channel": "test"}
PHONES = ["+15550100001", "+15550100002"]


@pytest.fixture
def engine(make_engine: Any, script_agent: ScriptAgent, test_channel: RecordingChannel) -> Harness:
    harness: Harness = make_engine(**SETTINGS)
    for phone in PHONES:
        harness.start(phone)
    script_agent.then(*[[Action.send_message("Hello!")]] * len(PHONES))
    TurnRunner(harness.relay, "worker").run_due(len(PHONES))
    return harness


@pytest.fixture
def commits(engine: Harness) -> Iterator[list[int]]:
    counted: list[int] = []

    def commit(*_: Any) -> None:
        counted.append(1)

    store = engine.relay.store.engine
    event.listen(store, "commit", commit)
    yield counted
    event.remove(store, "commit", commit)


def test_the_first_group_is_sent_on_its_claim_where_the_claim_held_off_writers(
    engine: Harness, test_channel: RecordingChannel, commits: list[int]
) -> None:
    dispatcher = Dispatcher(engine.relay, Channels(engine.relay), "worker")
    dispatcher.group_size = len(PHONES)

    assert dispatcher.deliver_due(10).sent == len(PHONES)
    assert len(test_channel.delivered) == len(PHONES)
    # The claim and the record of the sends, no confirmation between.
    assert len(commits) == 2


@POSTGRES_ONLY  # on SQLite the claim holds the database's write lock: nothing else holds a row
def test_a_conversation_held_elsewhere_during_the_claim_is_confirmed(
    engine: Harness, test_channel: RecordingChannel
) -> None:
    """PostgreSQL: while another transaction holds one conversation's row (a pause
    on its way), the claim skips that lock; that conversation's message is
    confirmed under its lock before it goes, the other's goes on the claim."""
    with engine.relay.store.transaction() as session:
        held = session.scalars(select(Instance.id).order_by(Instance.id)).first()
    other = engine.relay.store.engine.connect()
    transaction = other.begin()
    other.execute(select(Instance.id).where(Instance.id == held).with_for_update())
    released: list[bool] = []

    def let_go(*_: Any) -> None:  # once the claim has committed
        if not released:
            released.append(True)
            transaction.commit()

    dispatcher = Dispatcher(engine.relay, Channels(engine.relay), "worker")
    dispatcher.group_size = len(PHONES)
    confirmed: list[str | None] = []
    confirm = dispatcher._confirm

    def counting(group: list[tuple[Outbound, str]], *args: Any) -> Any:
        confirmed.extend(outbound.instance_id for outbound, _ in group)
        return confirm(group, *args)

    dispatcher._confirm = counting  # type: ignore[method-assign]
    event.listen(engine.relay.store.engine, "commit", let_go)
    try:
        assert dispatcher.deliver_due(10).sent == len(PHONES)
    finally:
        event.remove(engine.relay.store.engine, "commit", let_go)
        other.close()
    assert len(test_channel.delivered) == len(PHONES)
    assert confirmed == [held]


def test_a_later_group_is_confirmed_and_an_opt_out_meanwhile_stops_it(
    engine: Harness, test_channel: RecordingChannel
) -> None:
    dispatcher = Dispatcher(engine.relay, Channels(engine.relay), "worker")
    assert dispatcher.group_size == 1  # two groups: one message each

    def opt_out_the_other(message: Outbound) -> None:
        test_channel.before_send = None
        other = PHONES[1] if message.to == PHONES[0] else PHONES[0]
        engine.relay.opt_out(other, reason="asked by phone")

    test_channel.before_send = opt_out_the_other
    report = dispatcher.deliver_due(10)

    assert (report.sent, report.blocked) == (1, 1)
    assert len(test_channel.delivered) == 1
