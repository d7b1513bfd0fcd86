"""The outbox: every outbound message is a row, delivered at most once, retried with
backoff, failed after the configured attempts, and never sent to an opted-out contact."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

import pytest
from engine_support import DyingConsole, ProcessDied

from relay.channels.base import ChannelError, ChannelUnavailable, Outbound, PermanentChannelError
from relay.channels.console import ConsoleChannel
from relay.testing import PHONE, Harness, RecordingChannel

FLAKY = {
    "channels.flaky.type": "test",
    "defaults.channel": "flaky",
    "outbox.backoff": "30s",
    "outbox.max_attempts": 3,
}


@pytest.fixture
def dying(make_engine: Any, register_channel: Callable[[str, Any], None]) -> Harness:
    """The console channel, in a process that dies right after its first send."""
    deaths = [1]
    register_channel(
        "dying",
        lambda name, settings: DyingConsole(ConsoleChannel.from_settings(name, settings), deaths),
    )
    return make_engine(**{"channels.console.type": "dying"})


def test_a_delivery_cut_off_after_sending_is_resent_with_the_same_key_once(
    dying: Harness,
) -> None:
    iid = dying.start()
    with pytest.raises(ProcessDied):
        dying.tick()
    # The turn committed; the row is "sending" and the console wrote it once.
    assert dying.state(iid) == "WAITING_FOR_REPLY"
    (message,) = dying.outbound(iid)
    assert (message.status, message.attempts) == ("sending", 1)
    (line,) = dying.console_lines()
    assert line["message_id"] == message.id

    # A new process: the row's lease has not run out, so it is left alone.
    assert dying.tick().delivery.sent == 0
    dying.clock.advance(timedelta(minutes=2))
    report = dying.tick()
    assert report.delivery.sent == 1

    row = dying.message(message.id)
    assert (row.status, row.attempts) == ("sent", 2)
    assert row.idempotency_key == line["idempotency_key"]
    assert row.provider_message_id == line["provider_message_id"]
    assert dying.console_lines() == [line]
    assert dying.tick().delivery.sent == 0


def test_a_channel_that_fails_twice_then_succeeds(
    make_engine: Any, test_channel: RecordingChannel
) -> None:
    engine = make_engine(**{**FLAKY, "outbox.max_attempts": 5})
    test_channel.failures = [ChannelError("timeout"), ChannelError("HTTP 503")]
    iid = engine.start()
    report = engine.tick()
    assert (report.delivery.sent, report.delivery.retried) == (0, 1)
    (message,) = engine.outbound(iid)
    assert (message.status, message.attempts, message.last_error) == ("queued", 1, "timeout")
    assert engine.message(message.id).next_attempt_at == engine.clock.now() + timedelta(seconds=30)

    # Not before the backoff has passed: 30s, then 60s.
    engine.clock.advance(timedelta(seconds=29))
    assert engine.tick().delivery.retried == 0 and len(test_channel.attempts) == 1
    engine.clock.advance(timedelta(seconds=1))
    assert engine.tick().delivery.retried == 1 and len(test_channel.attempts) == 2
    engine.clock.advance(timedelta(seconds=59))
    engine.tick()
    assert len(test_channel.attempts) == 2
    engine.clock.advance(timedelta(seconds=1))
    assert engine.tick().delivery.sent == 1

    row = engine.message(message.id)
    assert (row.status, row.attempts, row.last_error) == ("sent", 3, None)
    assert row.provider_message_id == f"test-{row.idempotency_key[:8]}"
    assert {a.idempotency_key for a in test_channel.attempts} == {row.idempotency_key}
    assert engine.state(iid) == "WAITING_FOR_REPLY"
    engine.clock.advance(timedelta(minutes=10))
    assert engine.tick().delivery.sent == 0 and len(test_channel.attempts) == 3


def test_a_channel_that_always_fails_hands_the_conversation_to_a_person(
    make_engine: Any, test_channel: RecordingChannel
) -> None:
    engine = make_engine(**FLAKY)
    test_channel.fail_always = ChannelError("provider unreachable")
    iid = engine.start()
    engine.tick()
    engine.clock.advance(timedelta(seconds=30))
    engine.tick()
    assert engine.state(iid) == "WAITING_FOR_REPLY"
    engine.clock.advance(timedelta(seconds=60))
    report = engine.tick()
    assert report.delivery.failed == 1

    (message,) = engine.outbound(iid)
    assert (message.status, message.attempts) == ("failed", 3)
    assert message.last_error == "provider unreachable"
    view = engine.view(iid)
    assert view.state == "NEEDS_HUMAN_INTERVENTION"
    assert view.next_heartbeat_at is None
    last = engine.relay.history(iid)[-1]
    assert (last.event, last.actor) == ("request_intervention", "dispatcher")
    assert f"message {message.id}" in last.reason and "provider unreachable" in last.reason

    engine.clock.advance(timedelta(hours=1))
    engine.tick()
    assert len(test_channel.attempts) == 3
    assert engine.relay.status().outbox_failed == 1


def test_a_permanent_channel_error_fails_at_once(
    make_engine: Any, test_channel: RecordingChannel
) -> None:
    engine = make_engine(**FLAKY)
    test_channel.fail_always = PermanentChannelError("invalid recipient")
    iid = engine.start()
    assert engine.tick().delivery.failed == 1
    assert [(m.status, m.attempts) for m in engine.outbound(iid)] == [("failed", 1)]
    assert engine.state(iid) == "NEEDS_HUMAN_INTERVENTION"
    assert "invalid recipient" in engine.relay.history(iid)[-1].reason


def test_a_channel_removed_from_the_config_fails_its_messages(
    make_engine: Any, test_channel: RecordingChannel
) -> None:
    """The instance was started on a channel that relay.toml no longer defines."""
    before = make_engine(**{"channels.pigeon.type": "test"})
    iid = before.start(channel="pigeon")
    after = make_engine()
    after.tick()
    (message,) = after.outbound(iid)
    assert message.status == "failed"
    assert "unknown channel type 'pigeon'" in message.last_error
    assert after.state(iid) == "NEEDS_HUMAN_INTERVENTION"
    assert test_channel.attempts == []


def test_opt_out_blocks_a_message_whose_delivery_was_interrupted(dying: Harness) -> None:
    """The row is "sending" (its sender died), so the opt-out cannot withdraw it; the
    check at delivery time must stop the retry."""
    iid = dying.start()
    with pytest.raises(ProcessDied):
        dying.tick()
    (message,) = dying.outbound(iid)
    dying.relay.opt_out(PHONE, reason="asked by phone")
    assert dying.message(message.id).status == "sending"
    dying.clock.advance(timedelta(minutes=5))
    report = dying.tick()
    assert (report.delivery.sent, report.delivery.blocked) == (0, 1)
    row = dying.message(message.id)
    assert (row.status, row.attempts, row.last_error) == ("blocked", 2, "contact opted out")
    assert len(dying.console_lines()) == 1  # only the attempt from before the opt-out


def test_opt_out_blocks_a_message_waiting_for_a_retry(
    make_engine: Any, test_channel: RecordingChannel
) -> None:
    engine = make_engine(**FLAKY)
    test_channel.failures = [ChannelError("timeout")]
    iid = engine.start()
    engine.tick()
    engine.relay.receive(PHONE, "STOP")
    engine.clock.advance(timedelta(minutes=5))
    report = engine.tick()
    assert report.delivery.sent == 0
    assert [m.status for m in engine.outbound(iid)] == ["blocked"]
    assert len(test_channel.attempts) == 1 and test_channel.delivered == {}


def test_cancel_withdraws_queued_messages(engine: Harness) -> None:
    iid = engine.start()
    engine.tick()
    engine.relay.send(iid, "One more thing...")
    engine.relay.cancel(iid)
    assert engine.tick().delivery.sent == 0
    assert [m.status for m in engine.outbound(iid)] == ["sent", "cancelled"]
    assert len(engine.console_lines()) == 1


def test_a_slow_batch_does_not_send_a_message_another_worker_took_over(
    make_engine: Any, test_channel: RecordingChannel
) -> None:
    """Deliveries in one claimed batch go one after another. When one send hangs,
    the rows still waiting see their lease run out and another worker (a second
    daemon) claims them again, with the hung one (its lease ran out too: sent
    again with its key, as after a crash) and in order; the first worker must then
    leave them to it."""
    from relay.engine.outbox.dispatcher import SEND_LEASE, Dispatcher
    from relay.engine.runtime import Channels

    engine = make_engine(**FLAKY)
    iid = engine.start()
    engine.tick()  # the first message goes out alone
    notes = [engine.relay.send(iid, f"note {n}").id for n in range(4)]
    other = Dispatcher(engine.relay, Channels(engine.relay))
    hung: list[int] = []

    def hang(message: Any) -> None:
        if message.text == "note 1" and not hung:
            hung.append(message.message_id)
            engine.clock.advance(SEND_LEASE * 3)
            assert other.deliver_due(10, message_id=notes[3]).sent == 3

    test_channel.before_send = hang
    Dispatcher(engine.relay, Channels(engine.relay)).deliver_due(10)

    sends = [a.text for a in test_channel.attempts[1:]]
    assert sends == ["note 0", "note 1", "note 1", "note 2", "note 3"]
    assert [m.status for m in engine.outbound(iid)] == ["sent"] * 5


def test_a_slow_batch_holds_back_what_follows_a_message_another_worker_took_over(
    make_engine: Any, test_channel: RecordingChannel
) -> None:
    """When another worker has taken over a message of a batch but not the ones
    after it, those go back to the outbox instead of overtaking it."""
    from relay.engine.outbox.dispatcher import SEND_LEASE, Dispatcher
    from relay.engine.outbox.doubts import Doubts
    from relay.engine.outbox.screen import DeliveryReport
    from relay.engine.runtime import Channels
    from relay.store import claims

    engine = make_engine(**FLAKY)
    iid = engine.start()
    engine.tick()  # the first message goes out alone
    notes = [engine.relay.send(iid, f"note {n}").id for n in range(4)]

    def hang(message: Any) -> None:
        if message.text == "note 0" and test_channel.before_send is not None:
            test_channel.before_send = None
            engine.clock.advance(SEND_LEASE * 3)
            # Another worker asks about "note 0" (its lease ran out: the channel may
            # send it again safely), then claims it with "note 1"; it dies before sending.
            doubts = Doubts(engine.relay, Channels(engine.relay), "x")
            doubts.settle(SEND_LEASE, 10, DeliveryReport(), message_id=notes[1])
            with engine.relay.store.transaction() as session:
                taken = claims.claim_outbox(
                    session, engine.relay.now(), SEND_LEASE, 10, message_id=notes[1], owner="x"
                )
            assert [m.id for m in taken] == notes[:2]

    test_channel.before_send = hang
    report = Dispatcher(engine.relay, Channels(engine.relay)).deliver_due(10)

    assert [a.text for a in test_channel.attempts[1:]] == ["note 0"]
    # The other worker's question put "note 2" and "note 3" back in the outbox
    # (their leases had run out too); this worker leaves them there.
    assert report.held == 0
    assert [engine.message(n).status for n in notes] == ["sent", "sending", "queued", "queued"]
    engine.clock.advance(SEND_LEASE * 2)
    engine.tick()
    sends = [a.text for a in test_channel.attempts[2:]]
    assert sends == ["note 1", "note 2", "note 3"]


def test_a_channel_that_cannot_send_at_all_keeps_the_message_without_using_an_attempt(
    make_engine: Any, test_channel: RecordingChannel
) -> None:
    """Bad credentials: the message waits ``queued`` for a backoff, its attempt not
    counted, however many times the channel refuses, and goes once it can."""
    engine = make_engine(**FLAKY)
    iid = engine.start()
    test_channel.fail_always = ChannelUnavailable("HTTP 401: bad credentials")
    for _ in range(5):  # more refusals than outbox.max_attempts
        assert engine.tick().delivery.held == 1
        (message,) = engine.outbound(iid)
        assert (message.status, message.attempts) == ("queued", 0)
        row = engine.message(message.id)
        assert row.next_attempt_at == engine.relay.now() + timedelta(seconds=30)
        assert (row.last_error, row.lease_owner) == ("HTTP 401: bad credentials", None)
        engine.clock.advance(timedelta(seconds=30))

    test_channel.fail_always = None
    engine.tick()
    assert [(m.status, m.attempts) for m in engine.outbound(iid)] == [("sent", 1)]


class BatchingChannel(RecordingChannel):
    """A test channel that also takes several messages in one call (``send_many``)."""

    __test__ = False

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []
        self.batch_failures: list[ChannelError] = []

    def send_many(self, messages: Sequence[Outbound]) -> list[str]:
        self.batches.append([m.text for m in messages])
        if self.batch_failures:
            raise self.batch_failures.pop(0)
        return [self.send(message) for message in messages]


def _batching(register_channel: Callable[[str, Any], None]) -> BatchingChannel:
    channel = BatchingChannel()
    register_channel("test", lambda name, settings: channel)
    return channel


def _eight_notes_queued(
    make_engine: Any, register_channel: Callable[[str, Any], None]
) -> tuple[BatchingChannel, Any, str]:
    """A conversation on a batching channel with eight operator notes to deliver."""
    channel = _batching(register_channel)
    engine = make_engine(**FLAKY)
    iid = engine.start()
    engine.tick()
    for n in range(8):
        engine.relay.send(iid, f"note {n}")
    return channel, engine, iid


def test_a_channel_with_send_many_gets_a_group_in_one_call(
    make_engine: Any, register_channel: Callable[[str, Any], None]
) -> None:
    channel, engine, iid = _eight_notes_queued(make_engine, register_channel)

    assert engine.tick().delivery.sent == 8

    assert any(len(batch) > 1 for batch in channel.batches)
    assert len(channel.delivered) == 9
    assert [m.status for m in engine.outbound(iid)] == ["sent"] * 9
    assert len(channel.attempts) == 9


def test_a_failed_send_many_retries_each_of_its_messages_with_their_keys(
    make_engine: Any, register_channel: Callable[[str, Any], None]
) -> None:
    channel, engine, iid = _eight_notes_queued(make_engine, register_channel)
    channel.batch_failures = [ChannelError("HTTP 503")]

    report = engine.tick()

    # The notes behind the failed call wait for its retry, not sent before it.
    delivery = report.delivery
    assert delivery.retried >= 2 and delivery.sent + delivery.retried + delivery.held == 8
    waiting = [m for m in engine.outbound(iid) if m.status == "queued"]
    errors = [m.last_error for m in waiting]
    assert errors == ["HTTP 503"] * delivery.retried + [None] * delivery.held
    engine.clock.advance(timedelta(seconds=30))
    assert engine.tick().delivery.sent == len(waiting)
    assert [m.status for m in engine.outbound(iid)] == ["sent"] * 9
    assert len(channel.delivered) == 9


class UnthreadedChannel(RecordingChannel):
    """A test channel that says it never reads ``Outbound.thread``."""

    __test__ = False
    threads = False


@pytest.mark.parametrize("threads", [True, False])
def test_the_thread_is_read_only_for_a_channel_that_reads_it(
    make_engine: Any, register_channel: Callable[[str, Any], None], threads: bool
) -> None:
    """A channel without ``threads = False`` (email; a third party's) is handed the
    provider ids of the conversation's earlier messages; one that says it does not
    read them gets none, and the outbox skips the query."""
    channel = RecordingChannel() if threads else UnthreadedChannel()
    register_channel("test", lambda name, settings: channel)
    engine = make_engine(**FLAKY)
    iid = engine.start()
    engine.tick()
    engine.relay.send(iid, "a note")
    engine.tick()

    first, second = channel.attempts
    assert first.thread == ()
    assert second.thread == ((f"test-{first.idempotency_key[:8]}",) if threads else ())
