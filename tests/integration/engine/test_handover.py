"""A turn commit leases its new outbox rows to the dispatcher that sends next.

A pulse's turns write their messages already ``sending``, leased to the pulse's
dispatcher and screened in the commit's own transaction, so no claim reads and
rewrites them; the dispatcher sends them right after the batch. A crash between
the commit and the send leaves them leased, sent again once the lease runs out.
A conversation with an earlier message still in the outbox is not leased at
once: that message goes first, through a claim.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from relay.core.turns import Action
from relay.engine.outbox.dispatcher import SEND_LEASE, Dispatcher
from relay.engine.runtime import Channels
from relay.engine.turns.runner import TurnRunner
from relay.store import claims
from relay.store.models import Message
from relay.testing import Harness, RecordingChannel, ScriptAgent

SETTINGS = {"agent.backend": "script", "channels.test.type": "test", "defaults.channel": "test"}
PHONES = ["+15550100001", "+15550100002"]


@pytest.fixture
def engine(make_engine: Any) -> Harness:
    harness: Harness = make_engine(**SETTINGS)
    return harness


def _outbound(engine: Harness) -> list[Message]:
    with engine.relay.store.transaction() as session:
        query = select(Message).where(Message.direction == "outbound").order_by(Message.id)
        return list(session.scalars(query))


def _committer_with(engine: Harness, owner: str) -> tuple[TurnRunner, Dispatcher]:
    dispatcher = Dispatcher(engine.relay, Channels(engine.relay), owner)
    turns = TurnRunner(engine.relay, owner, outbox=dispatcher)
    return turns, dispatcher


def test_a_pulse_sends_its_turns_messages_without_claiming_them(
    engine: Harness,
    script_agent: ScriptAgent,
    test_channel: RecordingChannel,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for phone in PHONES:
        engine.start(phone)
    script_agent.then(*[[Action.send_message("Hello!")]] * len(PHONES))
    claimed: list[int] = []
    claim = claims.claim_outbox

    def counting(*args: Any, **kwargs: Any) -> Any:
        rows = claim(*args, **kwargs)
        claimed.extend(row.id for row in rows)
        return rows

    monkeypatch.setattr(claims, "claim_outbox", counting)

    report = engine.tick()

    assert report.delivery.sent == len(PHONES)
    assert sorted(m.to for m in test_channel.delivered.values()) == PHONES
    assert claimed == []  # leased in the turns' commit, never claimed
    sent = _outbound(engine)
    assert [(m.status, m.attempts, m.lease_owner) for m in sent] == [("sent", 1, None)] * 2


def test_rows_leased_in_the_commit_go_again_when_the_sender_died(
    engine: Harness, script_agent: ScriptAgent, test_channel: RecordingChannel
) -> None:
    engine.start(PHONES[0])
    script_agent.then([Action.send_message("Hello!")])
    turns, _ = _committer_with(engine, "crashed")

    turns.run_due(10)  # committed and leased; the process dies before sending

    (message,) = _outbound(engine)
    assert (message.status, message.attempts, message.lease_owner) == ("sending", 1, "crashed")
    other = Dispatcher(engine.relay, Channels(engine.relay), "other")
    assert other.deliver_due(10).sent == 0  # the lease still holds
    engine.clock.advance(SEND_LEASE)
    assert other.deliver_due(10).sent == 1
    (resent,) = test_channel.delivered.values()
    assert resent.idempotency_key == message.idempotency_key
    (message,) = _outbound(engine)
    assert (message.status, message.attempts) == ("sent", 2)


def test_an_earlier_message_in_the_outbox_goes_first(
    engine: Harness, script_agent: ScriptAgent, test_channel: RecordingChannel
) -> None:
    instance_id = engine.start(PHONES[0])
    script_agent.then([Action.send_message("Hello!")], [Action.send_message("Noted, thanks.")])
    engine.tick()
    engine.relay.send(instance_id, "A word from the team.")  # queued, not yet sent
    engine.relay.receive(PHONES[0], "Tuesday works")
    turns, dispatcher = _committer_with(engine, "worker")

    turns.run_due(10)

    *_, manual, answer = _outbound(engine)
    assert (manual.body, manual.status) == ("A word from the team.", "queued")
    assert (answer.body, answer.status, answer.attempts) == ("Noted, thanks.", "queued", 0)
    assert dispatcher.deliver_handed().sent == 0
    assert dispatcher.deliver_due(10).sent == 2
    assert [m.text for m in test_channel.attempts[-2:]] == [manual.body, answer.body]


def test_a_pause_after_the_commit_finds_the_message_in_flight(
    engine: Harness, script_agent: ScriptAgent, test_channel: RecordingChannel
) -> None:
    """The commit screened the message holding off every pause of its conversation;
    a pause that commits after it reports the message in flight, and it goes."""
    instance_id = engine.start(PHONES[0])
    script_agent.then([Action.send_message("Hello!")])
    turns, dispatcher = _committer_with(engine, "worker")
    turns.run_due(10)

    paused = engine.relay.pause(instance_id)

    assert paused.in_flight == 1
    assert dispatcher.deliver_handed().sent == 1
    assert [m.text for m in test_channel.attempts] == ["Hello!"]
