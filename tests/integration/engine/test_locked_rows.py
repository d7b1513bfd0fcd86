"""Plain rows on the daemon's hot path: what a batch changes is written with one
statement per set of changed columns, only the columns that changed, and the
state machine gives the same result on a plain row as on an ORM object."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, get_type_hints

import pytest
from sqlalchemy import event, select

from relay.core.states import Event
from relay.core.turns import Action
from relay.engine.conversation import transitions
from relay.engine.turns.runner import TurnRunner
from relay.store import claims
from relay.store.hotpath import locked_rows
from relay.store.hotpath.locked_rows import InstanceRow, MessageRow, PlainRow
from relay.store.models import Instance
from relay.testing import PHONE, Harness, ScriptAgent

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("kind", [InstanceRow, MessageRow])
def test_a_plain_row_declares_every_column_it_loads(kind: type[PlainRow]) -> None:
    hints = get_type_hints(kind)
    declared = {name for name in hints if name not in ("table", "columns")}
    assert declared == {column.key for column in kind.columns}


def test_changes_are_the_columns_set_to_new_values() -> None:
    row = InstanceRow({"id": "abc", "state": "ACTIVE", "version": 3})
    row.state = "ACTIVE"  # the same value: not a change
    row.version += 1
    assert row.take_changes() == {"version": 4}
    assert row.take_changes() == {}  # written: nothing left


@pytest.fixture
def statements(engine: Harness) -> Iterator[list[str]]:
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.lstrip().upper().startswith("UPDATE"):
            seen.append(statement)

    store = engine.relay.store.engine
    event.listen(store, "before_cursor_execute", record)
    yield seen
    event.remove(store, "before_cursor_execute", record)


def test_a_batch_is_written_with_one_statement_per_shape(
    engine: Harness, statements: list[str]
) -> None:
    ids = [engine.start(f"+1555010000{n}") for n in range(4)]
    statements.clear()
    with engine.relay.store.transaction() as session:
        locked = claims.lock_instances(session, ids)
        for row in locked.values():
            row.lease_owner = "worker"
        locked[ids[0]].turn_attempts += 5  # a second shape
        locked_rows.write(session, locked.values())
    assert len(statements) == 2
    with engine.relay.store.transaction() as session:
        owners = session.scalars(select(Instance.lease_owner).where(Instance.id.in_(ids)))
        assert set(owners) == {"worker"}


def test_the_state_machine_treats_both_kinds_alike(engine: Harness) -> None:
    plain, mapped = engine.start("+15550100001"), engine.start("+15550100002")
    with engine.relay.store.transaction() as session:
        row = claims.lock_instances(session, [plain])[plain]
        orm = session.scalar(select(Instance).where(Instance.id == mapped))
        assert orm is not None
        for instance in (row, orm):
            transitions.apply_event(session, instance, Event.PAUSE, now=NOW, actor="test")
        locked_rows.write(session, [row])
    with engine.relay.store.transaction() as session:
        found = {
            i.id: (i.state, i.previous_state, i.version, i.updated_at)
            for i in session.scalars(select(Instance).where(Instance.id.in_([plain, mapped])))
        }
    assert found[plain][:2] == found[mapped][:2] == ("PAUSED", "CREATED")
    assert found[plain][2] == found[mapped][2]
    assert found[plain][3] == found[mapped][3] == NOW


def test_ending_a_conversation_on_a_plain_row_promotes_the_next(engine: Harness) -> None:
    """The slot is freed in the store before the next in line is looked for."""
    first = engine.start("+15550100001")
    second = engine.start("+15550100001")
    assert engine.state(second) == "QUEUED"
    with engine.relay.store.transaction() as session:
        row = claims.lock_instances(session, [first])[first]
        transitions.apply_event(session, row, Event.CANCEL, now=NOW + timedelta(seconds=1))
        locked_rows.write(session, [row])
    assert engine.state(first) == "FAILED"  # cancelled
    assert engine.state(second) == "CREATED"


def test_an_agent_opt_out_reports_the_state_the_conversation_ended_in(
    make_engine: Any, script_agent: ScriptAgent
) -> None:
    """The opt-out ends the conversation through the contact's rows in the store;
    the turn's outcome says where it ended, not where the plain row stood."""
    engine = make_engine(**{"agent.backend": "script"})
    iid = engine.start(PHONE)
    script_agent.then([Action.schedule_next_heartbeat("2d"), Action.opt_out("asked to stop")])

    (outcome,) = TurnRunner(engine.relay, "worker").run_due(1)

    assert outcome.state == engine.state(iid) == "COMPLETED"
    with engine.relay.store.transaction() as session:
        row = session.scalar(select(Instance).where(Instance.id == iid))
        assert row is not None and row.outcome is not None
