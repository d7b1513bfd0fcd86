"""The log says what committed: a transition's or a delivery's line is written
when its transaction commits, once, and never for work that rolled back
(``relay.store.commit_log``)."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy.orm import Session

from relay.core.states import Event
from relay.core.values import EventKind
from relay.engine.conversation import transitions
from relay.engine.turns.commit import TurnCommitter
from relay.engine.turns.runner import TurnRunner
from relay.store import claims, commit_log, instances
from relay.testing import Harness


class _RolledBack(Exception):
    """Raised to leave a transaction without committing it."""


def _transition_lines(caplog: pytest.LogCaptureFixture, instance_id: str) -> list[str]:
    prefix = f"instance {instance_id}: "
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "relay.state"
        and r.getMessage().startswith(prefix)
        and " -> " in r.getMessage()
    ]


def _history_lines(engine: Harness, instance_id: str) -> list[str]:
    """The transition log in the store, worded as the log lines are."""
    return [
        f"instance {instance_id}: {h.from_state} -> {h.to_state} ({h.event} by {h.actor})"
        for h in engine.relay.history(instance_id)
        if h.kind == "transition" and h.from_state is not None
    ]


def _pause(engine: Harness, session: Session, instance_id: str) -> None:
    row = claims.lock_instances(session, [instance_id])[instance_id]
    transitions.apply_event(session, row, Event.PAUSE, now=engine.relay.now(), actor="op")


def test_a_transition_is_logged_when_its_transaction_commits(
    engine: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    instance_id = engine.start()
    caplog.set_level(logging.INFO, logger="relay.state")
    caplog.clear()
    with engine.relay.store.transaction() as session:
        _pause(engine, session, instance_id)
        assert _transition_lines(caplog, instance_id) == []
    lines = _transition_lines(caplog, instance_id)
    assert lines == _history_lines(engine, instance_id)[-1:]
    assert lines[0].endswith("-> PAUSED (pause by op)")
    record = next(r for r in caplog.records if r.getMessage() == lines[0])
    assert record.instance_id == instance_id  # type: ignore[attr-defined]


def test_a_transition_that_rolled_back_leaves_no_line(
    engine: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    instance_id = engine.start()
    caplog.set_level(logging.DEBUG, logger="relay")
    caplog.clear()
    with pytest.raises(_RolledBack), engine.relay.store.transaction() as session:
        _pause(engine, session, instance_id)
        raise _RolledBack
    assert engine.state(instance_id) != "PAUSED"
    assert [r.getMessage() for r in caplog.records if instance_id in r.getMessage()] == []


def test_a_batch_committed_again_one_by_one_logs_each_transition_once(
    engine: Harness, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch of turn commits that fails is rolled back and committed one turn at a
    time: only the second commits happened, so only they are logged."""
    # The follow-ups run as turn batches, not in the firing (test below); a pulse's
    # first batch is one turn, the next ones grow (TurnRunner.run_due).
    monkeypatch.setattr(TurnRunner, "takes_at_once", lambda _self, _agent: False)
    failed = _six_follow_ups_failing_once(engine, caplog, monkeypatch, smallest=2)
    assert failed == [4]
    assert any("committing 4 turns together failed" in r.getMessage() for r in caplog.records)


def _six_follow_ups_failing_once(
    engine: Harness,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    smallest: int,
) -> list[int]:
    """Six follow-ups due, the first outbox insert of at least ``smallest`` rows
    failing once: each heartbeat's firing and follow-up turn is logged once, as
    stored, and each follow-up sent once. The size of the batch that failed."""
    ids = [engine.start(f"+3460000000{n}") for n in range(1, 7)]
    engine.tick()
    engine.clock.advance(timedelta(days=2))
    write_outbox = TurnCommitter._write_outbox
    failed: list[int] = []

    def fails_once(self: TurnCommitter, session: Any, rows: Any) -> Any:
        if len(rows) >= smallest and not failed:
            failed.append(len(rows))
            raise RuntimeError("the batch's insert failed")
        return write_outbox(self, session, rows)

    monkeypatch.setattr(TurnCommitter, "_write_outbox", fails_once)
    caplog.set_level(logging.INFO, logger="relay")
    caplog.clear()
    engine.tick()
    for instance_id in ids:
        lines = _transition_lines(caplog, instance_id)
        assert len(lines) == 2, lines
        assert lines == _history_lines(engine, instance_id)[-2:]
    sent = [r.getMessage() for r in caplog.records if " sent on " in r.getMessage()]
    assert len(sent) == len(set(sent)) == len(ids)
    return failed


def test_follow_ups_run_in_a_failed_firing_are_fired_again_and_logged_once(
    engine: Harness, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Follow-ups run in the transaction that fires them (heartbeat.AtOnce): when
    that fails, nothing of it is kept or logged, and the heartbeats are fired
    again and their turns run as batches, each change logged and sent once."""
    failed = _six_follow_ups_failing_once(engine, caplog, monkeypatch, smallest=1)
    assert failed == [6]  # the six follow-ups, run in their firing's transaction
    assert any("running fired follow-ups at once failed" in r.getMessage() for r in caplog.records)


def _marked(engine: Harness, session: Session, mark: str) -> None:
    """An event and a log line, both named ``mark``, collected in ``session``."""
    transitions.record(session, EventKind.STATE, None, {"mark": mark}, engine.relay.now())
    commit_log.info(session, logging.getLogger("relay.test"), "mark %s", mark)


def _marks(engine: Harness, caplog: pytest.LogCaptureFixture) -> tuple[list[str], list[str]]:
    """The marks that reached the event log, and the log."""
    written = [e.data.get("mark") for e in engine.relay.events(kinds=["state.changed"])]
    logged = [r.getMessage() for r in caplog.records if r.name == "relay.test"]
    return [m for m in written if m], logged


def test_a_savepoint_that_rolls_back_drops_only_what_was_collected_within_it(
    engine: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="relay")
    with engine.relay.store.transaction() as session:
        _marked(engine, session, "before")
        with pytest.raises(_RolledBack), session.begin_nested():
            _marked(engine, session, "within")
            raise _RolledBack
        _marked(engine, session, "after")
    assert _marks(engine, caplog) == (["before", "after"], ["mark before", "mark after"])


def test_a_released_savepoint_is_not_the_commit(
    engine: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="relay")
    with pytest.raises(_RolledBack), engine.relay.store.transaction() as session:
        _marked(engine, session, "before")
        with session.begin_nested():
            _marked(engine, session, "within")
        assert _marks(engine, caplog)[1] == []  # nothing is written at the release
        raise _RolledBack
    assert _marks(engine, caplog) == ([], [])
    with engine.relay.store.transaction() as session:
        _marked(engine, session, "before")
        with session.begin_nested():
            _marked(engine, session, "within")
    assert _marks(engine, caplog) == (["before", "within"], ["mark before", "mark within"])


def test_a_start_that_finds_the_slot_taken_at_the_last_moment_keeps_its_creation_event(
    engine: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two starts for one contact at once: the second sees no holder, and its claim
    of the slot fails in a savepoint on the unique index; it queues. Its creation
    event, collected before that savepoint, must still reach the event log."""
    first = engine.start("+34600000001")
    real = instances.slot_holder
    looks: list[int] = []

    def no_holder_at_first(*args: Any, **kwargs: Any) -> Any:
        looks.append(1)  # the start's first look: the other start has not committed
        return None if len(looks) == 1 else real(*args, **kwargs)

    monkeypatch.setattr(instances, "slot_holder", no_holder_at_first)
    second = engine.start("+34600000001")
    assert engine.state(second) == "QUEUED"
    created = [
        e.data["event"]
        for e in engine.relay.events(kinds=["state.changed"])
        if e.instance_id == second
    ]
    assert created == ["start", "contact_has_active_instance"], created
    assert engine.state(first) != "QUEUED"
