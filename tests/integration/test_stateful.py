"""A hypothesis state machine over the real service and store.

Rules start, pause, resume and cancel instances through the API, and drive
agent-side events (first message, message sent, end, intervention, failure,
replies, heartbeats) through ``transitions.apply_event`` — across a few
contacts. The model predicts every state, including FIFO promotion, on its
own; after every step the invariants of docs/architecture.md are checked against the
database:

- at most one slot holder per contact, and it is exactly the set of instances
  for which ``holds_slot(state, previous)`` holds;
- a QUEUED instance waits only while its contact has a holder;
- the promoted instance is the oldest QUEUED one (the model's FIFO);
- PAUSED if and only if a prior state is recorded;
- every state change has a transition-log row, and the last row's
  ``to_state`` is the current state.

Each example uses fresh contacts in one database per test, so examples do not
see each other's instances.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from sqlalchemy import func, select

from relay.core.errors import Refused
from relay.core.states import TERMINAL, Event, State, holds_slot, next_state
from relay.engine.conversation import transitions
from relay.store import instances as store_instances
from relay.store.models import Contact, EventRow, Instance

CONTACTS_PER_EXAMPLE = 3

# Agent- and channel-side events the machine drives directly. The queue's
# own events (contact_has_active_instance, prior_instance_terminal) are left
# to the store, which must apply them by itself.
DRIVEN = [
    Event.AGENT_SENDS_FIRST_MESSAGE,
    Event.MESSAGE_SENT,
    Event.WAIT_FOR_REPLY,
    Event.CONTACT_REPLIES,
    Event.AGENT_PROCESSES_REPLY,
    Event.HEARTBEAT_FIRES,
    Event.FOLLOWUP_SENT,
    Event.MAX_FOLLOWUPS_EXCEEDED,
    Event.END_CONVERSATION,
    Event.REQUEST_INTERVENTION,
    Event.UNRECOVERABLE_ERROR,
    Event.MANUAL_SEND,
    Event.CONTACT_OPTED_OUT,
]


@dataclass
class Expected:
    id: str
    contact: int
    state: State
    previous: State | None = None
    log: int = 1  # the creation row

    def holds(self) -> bool:
        # written out here rather than asking relay.core
        if self.state in TERMINAL or self.state is State.QUEUED:
            return False
        return not (self.state is State.PAUSED and self.previous is State.QUEUED)


@dataclass
class Model:
    instances: list[Expected] = field(default_factory=list)  # in creation order

    def of_contact(self, contact: int) -> list[Expected]:
        return [i for i in self.instances if i.contact == contact]

    def holder(self, contact: int) -> Expected | None:
        held = [i for i in self.of_contact(contact) if i.holds()]
        assert len(held) <= 1
        return held[0] if held else None

    def move(self, inst: Expected, event: Event) -> None:
        """Apply ``event`` to ``inst`` and then the queue's consequences."""
        had_slot = inst.holds()
        target = next_state(inst.state, event, previous=inst.previous)
        inst.previous = inst.state if target is State.PAUSED else None
        inst.state = target
        inst.log += 1
        if (had_slot and not inst.holds()) or inst.state is State.QUEUED:
            self.promote(inst.contact)

    def promote(self, contact: int) -> None:
        if self.holder(contact) is not None:
            return
        waiting = [i for i in self.of_contact(contact) if i.state is State.QUEUED]
        if waiting:
            first = waiting[0]  # oldest by creation
            first.state = State.CREATED
            first.log += 1


class QueueMachine(RuleBasedStateMachine):
    db_url: str = ""
    make_relay: Any = None
    clock: Any = None
    _examples = itertools.count()

    def __init__(self) -> None:
        super().__init__()
        self.relay = self.make_relay(self.db_url, self.clock)
        self.model = Model()
        example = next(self._examples)
        self.addresses = [f"+1555{example % 1000:03d}{c:04d}" for c in range(CONTACTS_PER_EXAMPLE)]
        self.contact_ids: dict[int, int] = {}

    # -- rules -------------------------------------------------------------------------

    @initialize()
    def make_contacts(self) -> None:
        for address in self.addresses:
            self.relay.receive(address, "hello")  # creates the contact, kept unrouted
        with self.relay.store.transaction() as session:
            for n, address in enumerate(self.addresses):
                self.contact_ids[n] = session.scalar(
                    select(Contact.id).where(Contact.address == address)
                )

    @rule(contact=st.integers(0, CONTACTS_PER_EXAMPLE - 1))
    def start(self, contact: int) -> None:
        self.clock.advance(1)
        view = self.relay.start(self.addresses[contact], "objective", ["todo"])
        busy = self.model.holder(contact) is not None
        expected = Expected(view.id, contact, State.QUEUED if busy else State.CREATED)
        expected.log += int(busy)
        self.model.instances.append(expected)
        assert view.state == expected.state.value

    def _verb(self, index: int, event: Event, call: Any) -> None:
        inst = self.model.instances[index % len(self.model.instances)]
        self.clock.advance(1)
        try:
            next_state(inst.state, event, previous=inst.previous)
        except Refused:
            with pytest.raises(Refused):
                call(inst.id)
            return
        call(inst.id)
        self.model.move(inst, event)

    @precondition(lambda self: self.model.instances)
    @rule(index=st.integers(min_value=0))
    def pause(self, index: int) -> None:
        self._verb(index, Event.PAUSE, self.relay.pause)

    @precondition(lambda self: self.model.instances)
    @rule(index=st.integers(min_value=0))
    def resume(self, index: int) -> None:
        self._verb(index, Event.RESUME, self.relay.resume)

    @precondition(lambda self: self.model.instances)
    @rule(index=st.integers(min_value=0))
    def cancel(self, index: int) -> None:
        self._verb(index, Event.CANCEL, self.relay.cancel)

    @precondition(lambda self: self.model.instances)
    @rule(index=st.integers(min_value=0), event=st.sampled_from(DRIVEN))
    def drive(self, index: int, event: Event) -> None:
        self._verb(index, event, lambda instance_id: self._apply(instance_id, event))

    @precondition(lambda self: any(i.holds() for i in self.model.instances))
    @rule(data=st.data())
    def end_a_holder(self, data: st.DataObject) -> None:
        """Walk a slot holder to a terminal state by the agent's events, so that
        promotion happens often, not only by cancel."""
        holders = [i for i in self.model.instances if i.holds() and i.state is not State.PAUSED]
        if not holders:
            return
        inst = data.draw(st.sampled_from(holders))
        path = {
            State.CREATED: [Event.AGENT_SENDS_FIRST_MESSAGE, Event.END_CONVERSATION],
            State.ACTIVE: [Event.END_CONVERSATION],
            State.WAITING_FOR_REPLY: [Event.HEARTBEAT_FIRES, Event.MAX_FOLLOWUPS_EXCEEDED],
            State.WAITING_FOR_AGENT: [Event.UNRECOVERABLE_ERROR],
            State.HEARTBEAT_SCHEDULED: [Event.MAX_FOLLOWUPS_EXCEEDED],
            State.NEEDS_HUMAN_INTERVENTION: [Event.MANUAL_SEND, Event.END_CONVERSATION],
        }[inst.state]
        self.clock.advance(1)
        self._apply(inst.id, *path)
        for event in path:
            self.model.move(inst, event)

    def _apply(self, instance_id: str, *events: Event) -> None:
        with self.relay.store.transaction() as session:
            instance = store_instances.resolve(session, instance_id, lock=True)
            for event in events:
                transitions.apply_event(session, instance, event, now=self.relay.now(), actor="t")

    # -- invariants ------------------------------------------------------------------

    def _rows(self) -> tuple[dict[str, Any], dict[str, tuple[int, str | None]]]:
        ids = [i.id for i in self.model.instances]
        with self.relay.store.transaction() as session:
            instances = {
                row.id: row
                for row in session.execute(
                    select(
                        Instance.id,
                        Instance.contact_id,
                        Instance.contact_slot,
                        Instance.state,
                        Instance.previous_state,
                    ).where(Instance.contact_id.in_(list(self.contact_ids.values())))
                )
            }
            per_instance = (
                select(
                    EventRow.instance_id,
                    func.count().label("rows"),
                    func.max(EventRow.id).label("last_id"),
                )
                .where(EventRow.instance_id.in_(ids), EventRow.to_state.is_not(None))
                .group_by(EventRow.instance_id)
                .subquery()
            )
            log = {
                instance_id: (int(rows), to_state)
                for instance_id, rows, to_state in session.execute(
                    select(
                        per_instance.c.instance_id, per_instance.c.rows, EventRow.to_state
                    ).join(EventRow, EventRow.id == per_instance.c.last_id)
                )
            }
        return instances, log

    @invariant()
    def store_matches_the_model_and_keeps_the_invariants(self) -> None:
        if not self.contact_ids:
            return
        rows, log = self._rows()
        assert set(rows) == {i.id for i in self.model.instances}
        for expected in self.model.instances:
            row = rows[expected.id]
            # PAUSED <=> a prior state is recorded
            assert (row.state == State.PAUSED.value) == (row.previous_state is not None)
            # the model's prediction, FIFO promotion included
            assert (row.state, row.previous_state) == (
                expected.state.value,
                expected.previous.value if expected.previous else None,
            ), expected
            # a log row for every change; the last one names the current state
            assert log.get(expected.id) == (expected.log, row.state), expected
        for contact, contact_id in self.contact_ids.items():
            mine = [r for r in rows.values() if r.contact_id == contact_id]
            slot = {r.id for r in mine if r.contact_slot is not None}
            should = {
                r.id
                for r in mine
                if holds_slot(State(r.state), State(r.previous_state) if r.previous_state else None)
            }
            assert len(slot) <= 1
            assert slot == should
            assert all(r.contact_slot == contact_id for r in mine if r.contact_slot is not None)
            if any(r.state == State.QUEUED.value for r in mine):
                assert slot, f"contact {contact} has QUEUED instances but no holder"

    def teardown(self) -> None:
        self.relay.store.dispose()


SETTINGS = {
    "sqlite": settings(
        max_examples=30,
        stateful_step_count=30,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    ),
    "postgresql": settings(
        max_examples=15,
        stateful_step_count=25,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    ),
}


def test_queue_state_machine(db_url: str, db_kind: str, make_relay: Any, clock: Any) -> None:
    machine = type(
        "BoundQueueMachine",
        (QueueMachine,),
        {"db_url": db_url, "make_relay": staticmethod(make_relay), "clock": clock},
    )
    run_state_machine_as_test(machine, settings=SETTINGS[db_kind])


def test_the_model_itself_promotes_fifo() -> None:
    """The model used above, checked on a hand-written story."""
    model = Model()
    a, b, c = (Expected(n, 0, State.CREATED) for n in "abc")
    b.state = c.state = State.QUEUED
    model.instances += [a, b, c]
    model.move(b, Event.PAUSE)
    model.move(a, Event.CANCEL)
    assert (a.state, b.state, c.state) == (State.FAILED, State.PAUSED, State.CREATED)
    model.move(b, Event.RESUME)
    assert b.state is State.QUEUED
    model.move(c, Event.CANCEL)
    assert b.state is State.CREATED
