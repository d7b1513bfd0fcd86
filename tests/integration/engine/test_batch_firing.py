"""A pulse writes its heartbeat firings with one statement for the batch
(``transitions.fire_waiting``), not with a state-machine step per row. These
tests hold that statement to the state machine: every column of every fired row
must come out as ``apply_event`` (and ``claims.lease_turn``) would leave it, and
each firing keeps its transition-log row, its event and its log line."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest

from relay.core.states import Event
from relay.engine.conversation import heartbeat, transitions
from relay.store import claims
from relay.store.models import EventRow
from relay.testing import Harness

LEASE = timedelta(minutes=5)


class _RolledBack(Exception):
    """Raised to leave a transaction without committing it."""


def _waiting(engine: Harness) -> list[str]:
    """Four conversations whose heartbeats are due, in different situations: a
    first follow-up, a second one, one resumed after a pause (its countdown
    restarted from the time left), one with a heartbeat of its own length."""
    first = engine.start("+34600000001", heartbeat="1h", max_followups=3)
    second = engine.start("+34600000002", heartbeat="1h", max_followups=3)
    paused = engine.start("+34600000003", heartbeat="2h", max_followups=2)
    other = engine.start("+34600000004", heartbeat="30m", max_followups=3)
    engine.tick()
    engine.clock.advance(timedelta(hours=1))
    engine.tick()  # the first follow-ups of ``first``, ``second`` and ``other``
    engine.relay.pause(paused)
    engine.clock.advance(timedelta(minutes=10))
    engine.relay.resume(paused)
    engine.clock.advance(timedelta(hours=2))
    ids = [first, second, paused, other]
    assert [engine.state(i) for i in ids] == ["WAITING_FOR_REPLY"] * 4
    return ids


def _as_apply_event_leaves_them(
    engine: Harness, ids: list[str], lease: heartbeat.Lease | None
) -> dict[str, dict[str, Any]]:
    """Every loaded column of the rows after ``apply_event`` (and the lease), worked
    out row by row in a transaction that is then rolled back."""
    expected: dict[str, dict[str, Any]] = {}
    now = engine.relay.now()
    with pytest.raises(_RolledBack), engine.relay.store.transaction() as session:
        for instance_id, row in claims.lock_instances(session, ids).items():
            transitions.apply_event(
                session, row, Event.HEARTBEAT_FIRES, now=now, actor="heartbeat"
            )
            if lease is not None:
                claims.lease_turn(row, lease.owner, now + lease.length)
            expected[instance_id] = dict(vars(row))
        raise _RolledBack
    return expected


def _stored(engine: Harness, ids: list[str]) -> dict[str, dict[str, Any]]:
    with engine.relay.store.transaction() as session:
        return {i: dict(vars(row)) for i, row in claims.lock_instances(session, ids).items()}


@pytest.mark.parametrize("leased", [True, False], ids=["leased", "not-leased"])
def test_a_batch_firing_leaves_each_row_as_the_state_machine_would(
    engine: Harness, leased: bool
) -> None:
    ids = _waiting(engine)
    lease = heartbeat.Lease("worker-1", LEASE) if leased else None
    expected = _as_apply_event_leaves_them(engine, ids, lease)
    report = heartbeat.fire_due(engine.relay, 10, lease)
    assert (report.fired, report.abandoned, report.deferred) == (4, 0, 0)
    assert _stored(engine, ids) == expected
    claimed = {i: expected[i]["version"] for i in ids} if leased else {}
    assert dict(report.claimed) == claimed


def test_each_firing_keeps_its_log_row_event_and_log_line(
    engine: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    ids = _waiting(engine)
    with caplog.at_level(logging.INFO, logger="relay.state"):
        heartbeat.fire_due(engine.relay, 10)
    with engine.relay.store.transaction() as session:
        fired = {
            t.instance_id: t.reason
            for t in session.query(EventRow).filter_by(event="heartbeat_fires")
        }
    assert fired == {
        ids[0]: "follow-up 2 of 3",
        ids[1]: "follow-up 2 of 3",
        ids[2]: "follow-up 1 of 2",
        ids[3]: "follow-up 2 of 3",
    }
    events = [
        e
        for e in engine.relay.events(kinds=["state.changed"])
        if e.data["event"] == "heartbeat_fires" and e.data["reason"] == fired[e.instance_id]
    ]
    # This batch's firing of each (three of them had fired once before).
    assert sorted(e.instance_id for e in events) == sorted(ids)
    lines = [r.getMessage() for r in caplog.records if "heartbeat_fires" in r.getMessage()]
    assert sorted(lines) == sorted(
        f"instance {i}: WAITING_FOR_REPLY -> HEARTBEAT_SCHEDULED (heartbeat_fires by heartbeat)"
        for i in ids
    )


def test_only_the_exceptions_take_the_row_by_row_way(engine: Harness) -> None:
    """At its limit a conversation is abandoned (two transitions), not fired; the
    others of the same batch still fire together."""
    first = engine.start("+34600000001", heartbeat="1h", max_followups=0)
    second = engine.start("+34600000002", heartbeat="1h", max_followups=2)
    engine.tick()
    engine.clock.advance(timedelta(hours=1))
    report = heartbeat.fire_due(engine.relay, 10)
    assert (report.fired, report.abandoned) == (1, 1)
    assert engine.state(first) == "ABANDONED"
    assert engine.state(second) == "HEARTBEAT_SCHEDULED"


def test_the_stand_in_row_refuses_what_differs_from_row_to_row() -> None:
    """What a batch writes alike to every row is worked out on a stand-in that
    answers only for the id and the version: a transition reading any other
    column of its row could not be one statement, and must fail, not guess."""
    row = transitions._AnyRow()
    row.turn_attempts = 0
    row.version += 1
    assert row.assigned == {"turn_attempts": 0, "version": 1}
    with pytest.raises(AttributeError, match="heartbeat_seconds"):
        _ = row.heartbeat_seconds
