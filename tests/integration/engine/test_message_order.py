"""A conversation's messages reach the contact in the order they were written,
also when one of them is sent at once (``relay send``) and when several daemons
claim at the same moment. Both cases were found by the chaos test on PostgreSQL
(a message delivered after a later one of its conversation)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from backends import POSTGRES_ONLY
from sqlalchemy import update

from relay.api import Relay
from relay.channels.base import ChannelError
from relay.store import claims
from relay.store.models import Message
from relay.testing import RecordingChannel

LEASE = timedelta(minutes=2)


def _open(tmp_path: Path, db_url: str, clock: Any, defaults: str = "") -> Relay:
    config = tmp_path / "relay.toml"
    config.write_text(
        f'[database]\nurl = "{db_url}"\n[defaults]\nchannel = "t"\nheartbeat = "1d"\n'
        f'{defaults}[channels.t]\ntype = "test"\n'
    )
    return Relay.open(config, clock=clock)


def _sent_order(channel: RecordingChannel) -> list[int]:
    return [attempt.message_id for attempt in channel.attempts]


def _started(relay: Relay, *notes: str) -> tuple[str, list[Any]]:
    """A conversation whose first message went, and operator notes queued after it."""
    iid = relay.start("+15551230001", "Confirm the delivery", ["Which day?"]).id
    return iid, [relay.send(iid, text) for text in notes]


def test_a_message_sent_now_goes_after_what_its_conversation_has_due_before_it(
    tmp_path: Path, db_url: str, clock: Any, relay_channel: RecordingChannel
) -> None:
    """An operator's note sent at once used to overtake an earlier message of its
    conversation that was due again (here: its daemon died while sending it)."""
    with _open(tmp_path, db_url, clock) as relay:
        iid, [earlier] = _started(relay, "A first note")
        with relay.store.transaction() as session:  # a daemon claims it, then dies
            claims.claim_outbox(session, relay.now(), LEASE, 10, owner="dead")
        clock.advance(LEASE + timedelta(seconds=1))

        note = relay.send(iid, "A second note")
        assert relay.deliver(note.id).status == "sent"
        assert _sent_order(relay_channel)[-2:] == [earlier.id, note.id]


def test_a_message_sent_now_waits_for_an_earlier_one_still_held(
    tmp_path: Path, db_url: str, clock: Any, relay_channel: RecordingChannel
) -> None:
    with _open(tmp_path, db_url, clock) as relay:
        iid, [earlier] = _started(relay, "A first note")
        with relay.store.transaction() as session:  # a live daemon is sending it
            claims.claim_outbox(session, relay.now(), LEASE, 10, owner="alive")

        note = relay.send(iid, "A second note")
        assert relay.deliver(note.id).status == "queued"
        assert earlier.id not in _sent_order(relay_channel)
        assert note.id not in _sent_order(relay_channel)


@POSTGRES_ONLY
def test_a_claim_does_not_pass_a_message_another_claim_is_taking(
    tmp_path: Path, db_url: str, clock: Any, relay_channel: RecordingChannel
) -> None:
    """``SKIP LOCKED`` passes over the row another daemon's claim has locked; to this
    claim that row still looks due, so the next message of its conversation used to
    be claimed beside it and could be sent first."""
    with _open(tmp_path, db_url, clock) as relay:
        _, [first, second] = _started(relay, "A first note", "A second note")

        with relay.store.transaction() as taking:
            assert list(claims.lock_messages(taking, [first.id])) == [first.id]
            with relay.store.transaction() as other:
                passed = claims.claim_outbox(other, relay.now(), LEASE, 10, owner="other")
                assert [m.id for m in passed] == []
            taking.rollback()  # the other claim gave up: both go together, in order

        with relay.store.transaction() as session:
            claimed = claims.claim_outbox(session, relay.now(), LEASE, 10, owner="other")
            assert [m.id for m in claimed] == [first.id, second.id]


def test_a_message_behind_one_that_failed_in_the_same_batch_waits_for_its_retry(
    tmp_path: Path, db_url: str, clock: Any, relay_channel: RecordingChannel
) -> None:
    with _open(tmp_path, db_url, clock) as relay:
        _, [first, second] = _started(relay, "A first note", "A second note")
        relay_channel.failures.append(ChannelError("the provider is down"))
        relay.run_due(poll=False)
        assert second.id not in _sent_order(relay_channel)
        clock.advance(timedelta(hours=1))
        relay.run_due(poll=False)
        assert _sent_order(relay_channel)[-3:] == [first.id, first.id, second.id]


def test_a_message_behind_one_held_for_the_sending_window_waits_with_it(
    tmp_path: Path, db_url: str, clock: Any, relay_channel: RecordingChannel
) -> None:
    """A proactive message held for the window used to let the operator's note
    written after it (which a window does not hold) go first, when both were
    claimed in one batch."""
    with _open(tmp_path, db_url, clock, 'window = "mon-fri 09:00-18:00"\n') as relay:
        iid, [first] = _started(relay, "A first note")  # at 12:00
        with relay.store.transaction() as session:  # as a follow-up is: proactive
            session.execute(update(Message).where(Message.id == first.id).values(proactive=1))
        second = relay.send(iid, "A second note")
        clock.advance(timedelta(hours=7))  # 19:00, the window has closed

        relay.run_due(poll=False)
        assert {first.id, second.id}.isdisjoint(_sent_order(relay_channel))
        clock.advance(timedelta(hours=14, minutes=1))  # 09:01 the next day
        relay.run_due(poll=False)
        assert _sent_order(relay_channel)[-2:] == [first.id, second.id]
