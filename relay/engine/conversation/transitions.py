"""Applying a state-machine event to a stored instance: the one place state changes.

``apply_event`` asks ``relay.core`` for the next state, then keeps every
invariant that hangs on a state change in the same transaction: the prior
state of a pause, the contact slot, the heartbeat countdown (pending only in
WAITING_FOR_REPLY; a pause keeps the time left), the change's one row in the
record (:func:`record_change`, in the last section with the other events of the
log), and FIFO promotion of the next queued instance when one ends.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from operator import itemgetter
from typing import Any, cast

from sqlalchemy.orm import Session

from relay.core.outcomes import outcome_of
from relay.core.states import (
    FAILED_STATES,
    HEARTBEAT_STATE,
    QUEUED_STATES,
    SUCCEEDED,
    TRANSITIONS,
    Effect,
    Event,
    State,
    entering,
    holds_slot,
    leaving,
    next_state,
)
from relay.core.values import EventKind, MessageStatus
from relay.store import claims, commit_log, contacts, funnel, instances, messages
from relay.store import events as store_events
from relay.store import outbox as outbox_rows
from relay.store.hotpath import locked_rows
from relay.store.hotpath.locked_rows import InstanceFields
from relay.store.models import Instance, Message

log = logging.getLogger("relay.state")

SYSTEM = "relay"


def state_of(instance: InstanceFields) -> State:
    return State(instance.state)


def previous_of(instance: InstanceFields) -> State | None:
    return State(instance.previous_state) if instance.previous_state else None


def apply_event(
    session: Session,
    instance: InstanceFields,
    event: Event,
    *,
    now: datetime,
    actor: str = SYSTEM,
    reason: str | None = None,
    replies_waiting: bool | None = None,
) -> State:
    """Move ``instance`` by ``event`` (or raise Refused) and record it.

    ``replies_waiting``: whether unprocessed inbound waits for the instance, from
    a caller that has just read it under the instance's lock (a batch of turn
    commits: asking here would flush the session once per turn); None asks the
    store.
    """
    current = state_of(instance)
    previous = previous_of(instance)
    target = next_state(current, event, previous=previous, instance_id=instance.id)
    _move(session, instance, current, target, event, now)
    _keep_funnel_facts(session, instance, event, target, reason)
    _end(instance, target, event, reason, now)
    record_change(session, instance.id, (current, target, event), actor, reason, now)
    _update_slot(session, instance, now)
    takes_reply = Effect.TAKE_WAITING_REPLY in entering(target)
    if replies_waiting is None and takes_reply:
        replies_waiting = bool(messages.unprocessed_inbound(session, instance.id))
    if takes_reply and replies_waiting:
        # A reply that arrived while the instance could not take it (paused,
        # mid-follow-up, waiting for a human) is answered now; none is dropped.
        return apply_event(
            session,
            instance,
            Event.CONTACT_REPLIES,
            now=now,
            actor=actor,
            reason="a reply arrived earlier and was waiting",
        )
    return target


def _move(
    session: Session,
    instance: InstanceFields,
    current: State,
    target: State,
    event: Event,
    now: datetime,
) -> None:
    """The row's part of a transition: pause bookkeeping, the heartbeat, the state
    itself, and a fresh turn (no lease, no attempts) in the new state."""
    if Effect.RECORD_PRIOR_STATE in entering(target):
        instance.previous_state = current.value
    elif Effect.END_PAUSE in leaving(current):
        instance.previous_state = None
        instance.paused_until = None
        claims.release_held(session, instance.id, now)
    _move_heartbeat(instance, current, target, now)
    if event is Event.CONTACT_REPLIES:
        instance.follow_up_count = 0
    instance.state = target.value
    instance.version += 1
    instance.updated_at = now
    instance.lease_owner = None
    instance.lease_expires_at = None
    instance.turn_attempts = 0


def _end(
    instance: InstanceFields, target: State, event: Event, reason: str | None, now: datetime
) -> None:
    """A terminal state records when and why: a failure reason, or an end reason."""
    if not target.terminal:
        return
    instance.ended_at = now
    instance.drafts_pending = 0  # what was a draft is cancelled, blocked or a farewell now
    if event is Event.CANCEL:
        instance.failure_reason = "cancelled"
    elif target in FAILED_STATES and reason:
        instance.failure_reason = reason
    elif reason:
        instance.end_reason = reason


def fire_waiting(
    session: Session,
    waiting: Sequence[tuple[str, int, str]],
    *,
    now: datetime,
    actor: str,
    lease: tuple[str, datetime] | None,
    rows: Mapping[str, InstanceFields] | None = None,
) -> list[tuple[str, int]]:
    """HEARTBEAT_FIRES for a batch of locked conversations in WAITING_FOR_REPLY,
    given as (id, version, reason): one UPDATE for them all, then each one's
    row in the record and log line. Returns the (id, new version) pairs.

    With ``rows`` (the locked rows, read whole) the firing is made on them in
    memory instead of written: their caller commits the follow-up turns in the
    same transaction and writes each row once (``heartbeat.AtOnce``).

    That event changes every waiting row the same way, so what it assigns is
    worked out once, by the same steps :func:`apply_event` takes, on a stand-in
    for any of the rows (:class:`_AnyRow`), and written to all of them: a batch
    of 500 firings costs one statement instead of a row object, a state-machine
    step and a row write each. Both states hold the contact's slot, so no slot
    changes. With a ``lease`` (owner, expiry) each follow-up turn is leased in
    the same statement, as :func:`claims.lease_turn` leases one.
    ``tests/integration/engine/test_batch_firing.py`` compares the rows with
    what :func:`apply_event` leaves.
    """
    values = firing_values(session, now, lease)
    if rows is None:
        locked_rows.move_instances(session, [instance_id for instance_id, _, _ in waiting], values)
    else:
        for instance_id, _, _ in waiting:
            instance = rows[instance_id]
            for key, value in values.items():
                setattr(instance, key, value)
            instance.version += 1
    step = (HEARTBEAT_STATE, next_state(HEARTBEAT_STATE, Event.HEARTBEAT_FIRES),
            Event.HEARTBEAT_FIRES)  # fmt: skip
    for instance_id, _, reason in waiting:
        record_change(session, instance_id, step, actor, reason, now)
    return [(instance_id, version + 1) for instance_id, version, _ in waiting]


def firing_values(
    session: Session, now: datetime, lease: tuple[str, datetime] | None
) -> dict[str, Any]:
    """What HEARTBEAT_FIRES assigns to every waiting row (but the version, which
    each row bumps from its own), worked out on a stand-in (:class:`_AnyRow`)."""
    event = Event.HEARTBEAT_FIRES
    target = next_state(HEARTBEAT_STATE, event)
    row = _AnyRow()
    any_row = cast("InstanceFields", row)
    _move(session, any_row, HEARTBEAT_STATE, target, event, now)
    _keep_funnel_facts(session, any_row, event, target, None)
    _end(any_row, target, event, None, now)
    if lease is not None:
        claims.lease_turn(any_row, *lease)
    return {key: value for key, value in row.assigned.items() if key != "version"}


class _AnyRow:
    """Stands for every row of a batch that one event moves: it records what the
    transition assigns, and reads no column but the two the statement handles
    row by row (the id it matches, the version it bumps). A transition that
    read any other column would differ from row to row, so it raises here
    rather than being written alike to all of them."""

    _PER_ROW: dict[str, Any] = {"id": None, "version": 0}

    def __init__(self) -> None:
        self.__dict__["assigned"] = {}

    def __getattr__(self, name: str) -> Any:
        assigned = self.__dict__["assigned"]
        if name in assigned:
            return assigned[name]
        if name in self._PER_ROW:
            return self._PER_ROW[name]
        raise AttributeError(f"a batch transition cannot read each row's {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        self.__dict__["assigned"][name] = value


def _keep_funnel_facts(
    session: Session, instance: InstanceFields, event: Event, target: State, reason: str | None
) -> None:
    """The funnel's facts that a transition decides (``relay stats`` reads them
    from the row): a follow-up sent, and the outcome (asked of the todos only
    when the conversation completes)."""
    if event is Event.FOLLOWUP_SENT:
        instance.followups_sent = (instance.followups_sent or 0) + 1
    missing = target in SUCCEEDED and funnel.answers_missing(session, instance.id)
    instance.outcome = outcome_of(target, reason, answers_missing=missing)


#: States from which relay can hand a conversation to a person.
_HANDABLE = frozenset(s for s in State if Event.REQUEST_INTERVENTION in TRANSITIONS[s])


def hand_to_human(
    session: Session, instance: InstanceFields, reason: str, *, now: datetime, actor: str = SYSTEM
) -> bool:
    """Give the conversation to a person (a delivery that failed for good, a bounce)
    when its state allows; False when it is already with one, paused or ended."""
    if State(instance.state) not in _HANDABLE:
        return False
    apply_event(session, instance, Event.REQUEST_INTERVENTION, now=now, actor=actor, reason=reason)
    return True


def _countdown(instance: InstanceFields) -> int:
    """The seconds a countdown entering WAITING_FOR_REPLY runs: what a pause (or a
    draft) kept, else the agent's one-off, else the conversation's heartbeat."""
    for seconds in (instance.heartbeat_remaining_seconds, instance.heartbeat_override_seconds):
        if seconds is not None:
            return seconds
    return instance.heartbeat_seconds


def _move_heartbeat(instance: InstanceFields, current: State, target: State, now: datetime) -> None:
    if current is target:
        return  # nothing is entered or left (no terminal state has a transition)
    if Effect.START_HEARTBEAT in entering(target):
        seconds = _countdown(instance)
        instance.heartbeat_override_seconds = None
        if instance.drafts_pending:
            # Nothing went out yet: the countdown waits, whole, for the approval
            # (relay.engine.verbs.drafts starts it), as a pause keeps the time left.
            instance.next_heartbeat_at = None
            instance.heartbeat_remaining_seconds = seconds
            return
        instance.next_heartbeat_at = now + timedelta(seconds=seconds)
        instance.heartbeat_remaining_seconds = None
    elif Effect.STOP_HEARTBEAT in leaving(current):
        keeps = Effect.RECORD_PRIOR_STATE in entering(target)  # a pause keeps the time left
        if keeps and instance.next_heartbeat_at is not None:
            left = (instance.next_heartbeat_at - now).total_seconds()
            instance.heartbeat_remaining_seconds = max(0, int(left))
        instance.next_heartbeat_at = None
    if Effect.END in entering(target):
        instance.next_heartbeat_at = None
        instance.heartbeat_remaining_seconds = None


def _update_slot(session: Session, instance: InstanceFields, now: datetime) -> None:
    state, previous = state_of(instance), previous_of(instance)
    holding = holds_slot(state, previous)
    if holding and instance.contact_slot is None:
        instance.contact_slot = instance.contact_id
        locked_rows.write_now(session, instance)
    elif not holding and instance.contact_slot is not None:
        instance.contact_slot = None
        locked_rows.write_now(session, instance)
        promote_next(session, instance.contact_id, now=now)
    elif not holding and state in QUEUED_STATES:
        # A paused queued instance was resumed: it may be next in line already.
        locked_rows.write_now(session, instance)
        promote_next(session, instance.contact_id, now=now)


def promote_next(
    session: Session,
    contact_id: int,
    *,
    now: datetime,
    actor: str = SYSTEM,
    reason: str = "the contact's previous conversation ended",
) -> Instance | None:
    """Give a free slot to the contact's oldest QUEUED instance (FIFO by creation)."""
    contacts.lock(session, contact_id)
    session.flush()
    if instances.slot_holder(session, contact_id) is not None:
        return None
    waiting = instances.oldest_queued(session, contact_id)
    if waiting is None:
        return None
    apply_event(
        session,
        waiting,
        Event.PRIOR_INSTANCE_TERMINAL,
        now=now,
        actor=actor,
        reason=reason,
    )
    return waiting


# -- The record: each change's one row, and the other events ------------------------------
#
# The event log a program follows (``relay events``, ``relay wait``), in commit order,
# each row with a stable cursor (its id); a state change's row is also what ``relay
# history`` lists (issue 31: one row per change, where there were a transition-log row
# and an event). The few places that change state call :func:`record` (a state change:
# :func:`record_change`) in the transaction that changes it; the rows are inserted with
# one statement when that transaction commits (see :mod:`relay.store.events`). Message
# bodies are not copied into events: a program reads them with ``relay transcript``;
# events carry message ids.


def record(
    session: Session,
    kind: EventKind,
    instance_id: str | None,
    data: dict[str, Any],
    now: datetime,
    *,
    actor: str | None = None,
) -> None:
    """Add one event to the session's transaction (inserted at its commit)."""
    store_events.add(
        session,
        {
            "kind": kind.value,
            "instance_id": instance_id,
            "actor": actor,
            "data": data,
            "created_at": now,
            **store_events.NO_CHANGE,
        },
    )


def record_change(
    session: Session,
    instance_id: str,
    step: tuple[State, State, Event],
    actor: str,
    reason: str | None,
    now: datetime,
) -> None:
    """A state change (from, to, event): its one row, in ``relay events`` and ``relay
    history`` alike, and its log lines (written with the transaction)."""
    current, target, event = step
    _change(session, instance_id, (current.value, target.value, event.value), actor, reason, now)
    # The reason may quote the contact (an opt-out, an agent's words): DEBUG only.
    commit_log.info(
        session,
        log,
        "instance %s: %s -> %s (%s by %s)",
        instance_id,
        current.value,
        target.value,
        event.value,
        actor,
        instance_id=instance_id,
    )
    commit_log.debug(
        session, log, "instance %s: reason: %s", instance_id, reason or "-", instance_id=instance_id
    )


def record_creation(
    session: Session, instance_id: str, state: str, now: datetime, actor: str
) -> None:
    """A conversation's first row: ``start`` into its first state."""
    _change(session, instance_id, (None, state, CREATION), actor, None, now)


#: The ``event`` of a conversation's first row.
CREATION = "start"


def creation_rows(
    instance_id: str,
    steps: list[tuple[str | None, str, str, str | None]],
    actor: str,
    now: datetime,
) -> list[dict[str, Any]]:
    """The rows of a bulk import's creations, (from, to, event, reason) each, for one
    insert with the batch (:mod:`relay.store.bulk_inserts`)."""
    return [
        _change_row(instance_id, (before, after, event), actor, reason, now)
        for before, after, event, reason in steps
    ]


def _change(
    session: Session,
    instance_id: str,
    step: tuple[str | None, str, str],
    actor: str,
    reason: str | None,
    now: datetime,
) -> None:
    store_events.add(session, _change_row(instance_id, step, actor, reason, now))


def _change_row(
    instance_id: str,
    step: tuple[str | None, str, str],
    actor: str,
    reason: str | None,
    now: datetime,
) -> dict[str, Any]:
    """A state change's row: its own columns, no ``data`` (``relay events`` makes it)."""
    return {
        "kind": EventKind.STATE.value,
        "instance_id": instance_id,
        "actor": actor,
        "data": None,
        "created_at": now,
        "from_state": step[0],
        "to_state": step[1],
        "event": step[2],
        "reason": reason,
    }


def record_outbound(
    session: Session, rows: Iterable[dict[str, Any]], now: datetime
) -> dict[str, int]:
    """``message.queued`` for outbox rows a batch inserted with one statement (they
    have no ids in hand: found by their idempotency keys, one indexed query); the
    ids by key."""
    keys = {row["idempotency_key"]: row for row in rows}
    if not keys:
        return {}
    # By id, in C: sorting the Rows themselves compares them in Python (5 ms a batch of 500).
    found = sorted(outbox_rows.ids_by_key(session, keys), key=itemgetter(0))
    for message_id, key in found:
        row = keys[key]
        data = _queued(message_id, row)
        if row["status"] == MessageStatus.DRAFT.value:
            record(session, EventKind.DRAFT, row["instance_id"], {**data, "action": "written"}, now)
        else:
            record(session, EventKind.QUEUED, row["instance_id"], data, now)
    return {key: message_id for message_id, key in found}


def record_queued(session: Session, message: Message, now: datetime) -> None:
    data = _queued(message.id, {"author": message.author, "channel": message.channel})
    record(session, EventKind.QUEUED, message.instance_id, data, now)


def _queued(message_id: int, row: dict[str, Any]) -> dict[str, Any]:
    return {"message_id": message_id, "author": row.get("author"), "channel": row.get("channel")}
