"""Follow-ups whose agent answers at once run in the transaction that fires them
(``relay.engine.conversation.heartbeat.AtOnce``, issue 31): the conversation's row
is written once per follow-up instead of twice, and nothing else changes: the
same record, the same row, the same message."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest

from relay.core.turns import Action, TurnReason
from relay.engine.turns.runner import TurnRunner
from relay.testing import Harness, ScriptAgent, traced_statements

PHONES = [f"+3460000001{n}" for n in range(5)]


@contextmanager
def instance_updates(engine: Harness) -> Iterator[list[int]]:
    """Counts the UPDATEs of ``instances`` sent while it is open: on SQLite each row
    of an executemany, on PostgreSQL each statement (a batch's rows go in one, as
    arrays): :func:`relay.testing.traced_statements`."""
    found = [0]

    def seen(sql: str, _rows: int) -> None:
        if sql.lstrip()[:40].upper().replace('"', "").startswith("UPDATE INSTANCES"):
            found[0] += 1

    with traced_statements(engine.relay.store, seen):
        yield found


def _history(engine: Harness, instance_id: str) -> list[tuple[str, str, str, str | None]]:
    return [
        (h.from_state, h.to_state, h.event, h.reason)
        for h in engine.relay.history(instance_id)
    ]


def test_a_follow_up_run_at_once_writes_its_conversation_once(
    engine: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = [engine.start(phone, heartbeat="1d", max_followups=3) for phone in PHONES]
    engine.tick()
    engine.clock.advance(timedelta(days=1, minutes=1))
    with instance_updates(engine) as at_once:
        report = engine.tick()
    assert report.fired == len(ids) and report.delivery.sent == len(ids)
    assert sorted(t.instance_id for t in report.turns) == sorted(ids)

    # The next follow-up the two-step way: fired and written, then run and written.
    monkeypatch.setattr(TurnRunner, "takes_at_once", lambda _self, _agent: False)
    engine.clock.advance(timedelta(days=1, minutes=1))
    with instance_updates(engine) as two_steps:
        report = engine.tick()
    assert report.delivery.sent == len(ids)
    if engine.relay.store.dialect == "sqlite":  # rows written
        assert (at_once[0], two_steps[0]) == (len(ids), len(ids) + 1)  # + the firing's
    else:  # statements: the turns' commits (one batch of 1, then one of 4) and the firing's
        assert (at_once[0], two_steps[0]) == (1, 3)

    for instance_id in ids:
        first, second = _history(engine, instance_id)[-4:-2], _history(engine, instance_id)[-2:]
        assert first == [
            ("WAITING_FOR_REPLY", "HEARTBEAT_SCHEDULED", "heartbeat_fires", "follow-up 1 of 3"),
            ("HEARTBEAT_SCHEDULED", "WAITING_FOR_REPLY", "followup_sent", "follow-up 1"),
        ]
        assert second == [
            ("WAITING_FOR_REPLY", "HEARTBEAT_SCHEDULED", "heartbeat_fires", "follow-up 2 of 3"),
            ("HEARTBEAT_SCHEDULED", "WAITING_FOR_REPLY", "followup_sent", "follow-up 2"),
        ]
        view = engine.view(instance_id)
        assert (view.state, view.follow_up_count) == ("WAITING_FOR_REPLY", 2)
        assert [m.status for m in engine.outbound(instance_id)] == ["sent"] * 3


def test_an_agent_that_takes_its_time_runs_after_the_firing(
    make_engine: Any, script_agent: ScriptAgent
) -> None:
    """An agent without ``at_once`` (a model call, a command) never runs inside a
    transaction: its follow-up is fired, committed, then run as a turn."""
    engine = make_engine(**{"agent.backend": "script"})
    script_agent.then([Action.send_message("Hello")], [Action.send_message("Still there?")])
    iid = engine.start(heartbeat="1h", max_followups=2)
    engine.tick()
    engine.clock.advance(timedelta(hours=1, minutes=1))
    with instance_updates(engine) as updates:
        report = engine.tick()
    assert script_agent.contexts[-1].reason is TurnReason.FOLLOW_UP
    assert [m.text for m in engine.outbound(iid)] == ["Hello", "Still there?"]
    assert report.fired == 1 and [t.instance_id for t in report.turns] == [iid]
    assert updates[0] == 2  # the firing's, then the turn's


def test_an_agent_that_fails_at_once_hands_the_conversation_to_a_person(
    make_engine: Any, script_agent: ScriptAgent
) -> None:
    """The failure is recorded in the firing's own transaction (a second one would
    wait for SQLite's write lock that the firing holds)."""
    engine = make_engine(**{"agent.backend": "script"})
    script_agent.at_once = True
    script_agent.then([Action.send_message("Hello")], RuntimeError("the script broke"))
    iid = engine.start(heartbeat="1h", max_followups=2)
    engine.tick()
    engine.clock.advance(timedelta(hours=1, minutes=1))
    report = engine.tick()
    assert [t.instance_id for t in report.turns] == [iid]
    assert engine.state(iid) == "NEEDS_HUMAN_INTERVENTION"
    assert _history(engine, iid)[-1][3] == "agent crashed: RuntimeError: the script broke"
    assert [m.text for m in engine.outbound(iid)] == ["Hello"]


def test_a_context_read_in_the_firing_sees_the_fired_row(
    make_engine: Any, script_agent: ScriptAgent
) -> None:
    """What the agent is shown of a follow-up is the same either way: its number,
    the transcript, the reason."""
    engine = make_engine(**{"agent.backend": "script"})
    script_agent.at_once = True
    script_agent.then(
        [Action.send_message("Hello")],
        [Action.send_message("Still there?")],
        [Action.send_message("Last try")],
    )
    iid = engine.start(heartbeat="1h", max_followups=2)
    engine.tick()
    for _ in range(2):
        engine.clock.advance(timedelta(hours=1, minutes=1))
        engine.tick()
    follow_ups = script_agent.contexts[1:]
    assert [c.reason for c in follow_ups] == [TurnReason.FOLLOW_UP] * 2
    assert [c.follow_up_number for c in follow_ups] == [1, 2]
    assert [c.max_followups for c in follow_ups] == [2, 2]
    assert [m.text for m in follow_ups[1].transcript] == ["Hello", "Still there?"]
    assert [m.text for m in engine.outbound(iid)] == ["Hello", "Still there?", "Last try"]


def test_a_context_row_takes_every_column_a_firing_changes_from_the_fired_row(
    engine: Harness,
) -> None:
    """The context of a follow-up run in its firing's transaction is read from the
    store before the fired row is written: each column the firing assigns must
    come from the fired row (runner._Fired.FIRED), or the agent would be shown
    the row as it was."""
    from relay.engine.conversation.transitions import firing_values
    from relay.engine.turns.runner import _Fired

    with engine.relay.store.transaction() as session:
        now = engine.relay.now()
        assigned = firing_values(session, now, ("daemon", now + timedelta(minutes=5)))
    assert set(assigned) | {"version"} <= set(_Fired.FIRED)
