"""On SQLite a delivery's first group goes out on its fresh claim; later groups,
and every group on PostgreSQL, are confirmed.

A SQLite claim screens and leases its rows holding the database's write lock,
so the first group is sent without a second, confirming transaction. Groups
sent after other sends took their time are confirmed again: an opt-out recorded
meanwhile stops them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event

from relay.channels.base import Outbound
from relay.core.turns import Action
from relay.engine.backends import Channels
from relay.engine.outbox import Dispatcher
from relay.engine.turns import TurnRunner
from relay.testing import Harness, RecordingChannel, ScriptAgent

SETTINGS = {"agent.backend": "script", "channels.test.type": "test", "defaults.channel": "test"}
PHONES = ["+15550100001", "+15550100002"]


@pytest.fixture
def engine(
    make_engine: Any, script_agent: ScriptAgent, test_channel: RecordingChannel
) -> Harness:
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
    if engine.relay.store.writers_serialised:
        # SQLite: the claim and the record of the sends, no confirmation between.
        assert len(commits) == 2
    else:
        # PostgreSQL: a pause could commit after the claim read the state.
        assert len(commits) == 3


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
