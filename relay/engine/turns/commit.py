"""Committing agent turns: each turn's result applied on its locked row, in one
transaction for a batch, only if nothing changed since the turn was claimed.

The second half of :mod:`relay.engine.turns.runner`. A turn's effects go together
(its state change, transition row, transcript, todos, outbox rows), checked
against its own version and lease: a pause or cancel during the turn bumps the
version and the turn's decisions are dropped. The append-only rows of a batch
(outbox messages, transition log) are inserted with one statement each, just
before its transaction commits.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Row
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from relay.core.approval import needs_approval
from relay.core.states import Event, State
from relay.core.turn_endings import FollowUpCount, ending
from relay.core.turns import Action, TurnContext, TurnPlan, TurnReason
from relay.core.values import Author, EventKind, MessageStatus, Scope, split_scoped_key
from relay.engine.contacts.optouts import opt_out as record_opt_out
from relay.engine.conversation import transitions
from relay.store import claims, commit_log, queries, state_entries
from relay.store import instances as store_instances
from relay.store import messages as store_messages
from relay.store import outbox as outbox_rows
from relay.store.hotpath import locked_rows
from relay.store.hotpath.locked_rows import InstanceFields
from relay.store.models import Contact, Message, StateEntry, Todo
from relay.store.outbox import as_draft, outbound_row

if TYPE_CHECKING:
    from relay.engine.outbox.dispatcher import Dispatcher
    from relay.engine.outbox.screen import Handover
    from relay.engine.runtime import Runtime

log = logging.getLogger("relay.turns")

AGENT = "agent"
NOTES_KEY = "relay:last_turn_notes"
#: Where the agent's next turn finds the draft a person rejected and why (its
#: ``state``): ``{"message_id": ..., "text": ..., "reason": ...}``; cleared by that turn.
REJECTED_KEY = "relay:rejected_draft"


@dataclass(frozen=True)
class _Loaded:
    """Rows a batch of turn commits needs, read once for the whole batch under its
    locks, and the outbox messages it writes (inserted with one statement just
    before the batch's transaction commits)."""

    todos: dict[str, list[Todo]]
    inbound: dict[str, list[Message]]
    messages: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Decided:
    """What an agent decided in a turn, and its plan (checked once, here, and
    applied by the commit as it is)."""

    actions: list[Action]
    #: None when the actions are invalid beyond an answer to correct (``error``
    #: says why): the commit hands the conversation to a person.
    plan: TurnPlan | None
    error: str | None = None


@dataclass(frozen=True)
class TurnOutcome:
    instance_id: str
    reason: str
    state: str
    messages: tuple[str, ...] = ()
    discarded: bool = False
    note: str | None = None


@dataclass
class TurnCommitter:
    """Commits the turns one worker (``owner``) claimed."""

    relay: Runtime
    owner: str
    #: The dispatcher that sends right after each commit (a pulse's): the batch's
    #: new outbox rows are leased to it in the commit (Dispatcher.lease_new).
    outbox: Dispatcher | None = None

    def ours(self, instance: InstanceFields, version: int) -> bool:
        """Whether this worker's claim on the (locked) instance still holds."""
        return instance.version == version and instance.lease_owner == self.owner

    def locked(self, session: Session, instance_id: str, version: int) -> InstanceFields | None:
        instance = claims.lock_instance(session, instance_id)
        if instance is None or not self.ours(instance, version):
            return None
        return instance

    def commit_many(self, items: list[tuple[str, int, TurnContext, Decided]]) -> list[TurnOutcome]:
        """Commit several turns' results in one transaction, each turn checked and
        applied on its own locked row; should that transaction fail, they are
        committed one by one, so one bad turn cannot hold back the others."""
        if not items:
            return []
        try:
            with self.relay.store.transaction() as session:
                outcomes, handover = self.commit_in(session, items)
            if handover is not None and self.outbox is not None:
                self.outbox.adopt(handover)  # committed: its rows are the dispatcher's
            return outcomes
        except Exception:
            if len(items) == 1:
                raise
            log.warning("committing %s turns together failed; committing one by one", len(items))
            return [self.commit_many([item])[0] for item in items]

    def commit_in(
        self,
        session: Session,
        items: list[tuple[str, int, TurnContext, Decided]],
        locked: Mapping[str, InstanceFields] | None = None,
    ) -> tuple[list[TurnOutcome], Handover | None]:
        """:meth:`commit_many`'s work in ``session``; ``locked``: the rows, locked and
        read whole already (a firing's: ``heartbeat.AtOnce``). Returns the outcomes
        and what to hand the dispatcher once the transaction has committed."""
        if not items:
            return [], None
        ids = [item[0] for item in items]
        # Todos are loaded (as objects to update) only for turns that mark one.
        marking = [item[0] for item in items if _marks_todos(item[3].actions)]
        if locked is None:
            locked = claims.lock_instances(session, ids)
        loaded = _Loaded(
            queries.todos_for(session, marking) if marking else {},
            store_messages.unprocessed_inbound_for(session, ids),
        )
        outcomes = [
            self._commit_in(session, locked.get(item[0]), *item, loaded=loaded) for item in items
        ]
        locked_rows.write(session, locked.values())
        return outcomes, self._write_outbox(session, loaded.messages)

    def _write_outbox(self, session: Session, rows: list[dict[str, Any]]) -> Handover | None:
        """Insert the batch's outbox rows; with a dispatcher, those that may go at
        once are leased to it in this transaction and screened (what it sends next)."""
        if not rows:
            return None
        leased = self.outbox.lease_new(session, rows) if self.outbox is not None else []
        outbox_rows.insert_outbox(session, rows)
        ids = transitions.record_outbound(session, rows, self.relay.now())
        if not leased or self.outbox is None:
            return None
        return self.outbox.screen_new(session, leased, ids)

    def _commit_in(
        self,
        session: Session,
        instance: InstanceFields | None,
        instance_id: str,
        version: int,
        context: TurnContext,
        decided: Decided,
        *,
        loaded: _Loaded,
    ) -> TurnOutcome:
        if instance is None or not self.ours(instance, version):
            return self.discarded(instance_id, context.reason, session)
        plan = decided.plan
        if plan is None:
            why = f"invalid agent action: {decided.error}"
            return self.intervene(session, instance, context.reason, why)
        seen = {m.id for m in context.new_messages}
        unseen = [m for m in loaded.inbound[instance_id] if m.id not in seen]
        if plan.stale_given(len(unseen)):
            return self._reconsider(instance, context.reason)
        now = self.relay.now()
        self._apply_plan(session, instance, plan, context, now, loaded)
        if plan.opt_out_reason is not None:
            return self._opt_out(session, instance, context, plan.opt_out_reason, now)
        return self._conclude(session, instance, plan, context, now, loaded)

    def _conclude(
        self,
        session: Session,
        instance: InstanceFields,
        plan: TurnPlan,
        context: TurnContext,
        now: datetime,
        loaded: _Loaded,
    ) -> TurnOutcome:
        """Move the instance to where the turn ends, and keep the turn's notes."""
        # Inbound that arrived after the context was read is still unprocessed:
        # entering WAITING_FOR_REPLY answers it (known here without a query).
        waiting = any(m.status == MessageStatus.RECEIVED.value for m in loaded.inbound[instance.id])
        final = _advance(
            session,
            instance,
            plan,
            now,
            replied=bool(context.new_messages),
            replies_waiting=waiting,
        )
        for note in plan.notes:
            commit_log.info(
                session, log, "instance %s: %s", instance.id, note, instance_id=instance.id
            )
        if plan.notes:
            # The agent's next turn sees what relay could not do (place_call) in
            # its state, so it does not assume the call happened.
            store_state(session, instance, NOTES_KEY, list(plan.notes), now)
        return TurnOutcome(
            instance.id,
            context.reason.value,
            final.value,
            plan.messages,
            note="; ".join(plan.notes) or None,
        )

    def _apply_plan(
        self,
        session: Session,
        instance: InstanceFields,
        plan: TurnPlan,
        context: TurnContext,
        now: datetime,
        loaded: _Loaded,
    ) -> None:
        self._write_messages(session, instance, plan, context, now, loaded)
        todos = {t.position: t for t in loaded.todos.get(instance.id, ())}
        for todo_id, status in plan.todo_updates:
            todo: Todo = todos[todo_id]
            todo.status = status.value
            todo.updated_at = now
        apply_answers(session, instance, todos, plan, now)
        for key, value in plan.state_updates:
            store_state(session, instance, key, value, now)
        seen = {m.id for m in context.new_messages}
        for message in loaded.inbound[instance.id]:
            if message.id in seen:
                message.status = MessageStatus.PROCESSED.value
                message.processed_at = now
        if plan.next_heartbeat is not None:
            instance.heartbeat_override_seconds = int(plan.next_heartbeat.total_seconds())

    def _write_messages(
        self,
        session: Session,
        instance: InstanceFields,
        plan: TurnPlan,
        context: TurnContext,
        now: datetime,
        loaded: _Loaded,
    ) -> None:
        """The turn's messages, as outbox rows or, when a person approves them
        first, as drafts (``instances.drafts_pending`` counts them)."""
        proactive = context.reason in (TurnReason.FIRST_MESSAGE, TurnReason.FOLLOW_UP)
        drafts = needs_approval(instance.approval) and bool(plan.messages)
        for text in plan.messages:
            # Written with the batch's other messages, in one statement, at its commit.
            row = outbound_row(instance, text, Author.AGENT, now, proactive=proactive)
            loaded.messages.append(as_draft(row) if drafts else row)
        if drafts:
            instance.drafts_pending = (instance.drafts_pending or 0) + len(plan.messages)
        if context.state.get(REJECTED_KEY) is not None:
            # The turn has read why its last draft was turned down; the next one need not.
            store_state(session, instance, REJECTED_KEY, None, now)

    def _opt_out(
        self,
        session: Session,
        instance: InstanceFields,
        context: TurnContext,
        reason: str,
        now: datetime,
    ) -> TurnOutcome:
        """The agent understood "leave me alone": the same opt-out as a STOP keyword
        (this conversation ends, queued ones fail, nothing more is sent)."""
        person = session.get(Contact, instance.contact_id)
        assert person is not None
        # The opt-out ends the contact's conversations as it reads them from the
        # store, this one included: it must read this turn's changes.
        locked_rows.write_now(session, instance)
        record_opt_out(session, person, now, reason=f"agent: {reason}")
        commit_log.info(
            session,
            log,
            "instance %s: the agent recorded an opt-out",
            instance.id,
            instance_id=instance.id,
        )
        state = store_instances.state_of(session, instance.id) or instance.state
        return TurnOutcome(instance.id, context.reason.value, state)

    def _reconsider(self, instance: InstanceFields, reason: TurnReason) -> TurnOutcome:
        """Drop the turn's decisions and give the turn back: it runs again at once,
        with the reply that arrived while the agent was deciding."""
        instance.lease_owner = None
        instance.lease_expires_at = None
        log.info(
            "instance %s: a reply arrived during the final turn; the turn runs again",
            instance.id,
            extra={"instance_id": instance.id},
        )
        return TurnOutcome(
            instance.id,
            reason.value,
            instance.state,
            discarded=True,
            note="the contact wrote while the agent was ending the conversation; "
            "the turn runs again with the new message",
        )

    def intervene(
        self, session: Session, instance: InstanceFields, reason: TurnReason, why: str
    ) -> TurnOutcome:
        # ``why`` may carry the agent's or the contact's words: DEBUG only.
        log.warning("instance %s: needs a human", instance.id, extra={"instance_id": instance.id})
        log.debug("instance %s: needs a human: %s", instance.id, why)
        final = transitions.apply_event(
            session,
            instance,
            Event.REQUEST_INTERVENTION,
            now=self.relay.now(),
            actor=AGENT,
            reason=why,
        )
        return TurnOutcome(instance.id, reason.value, final.value, note=why)

    def discarded(
        self, instance_id: str, reason: TurnReason, session: Session | None = None
    ) -> TurnOutcome:
        """The outcome of a turn whose instance changed; inside a transaction, pass its
        session (a second transaction would wait forever for SQLite's write lock)."""
        log.info(
            "instance %s: changed during the turn; its result was discarded",
            instance_id,
            extra={"instance_id": instance_id},
        )
        if session is not None:
            state = store_instances.state_of(session, instance_id)
        else:
            with self.relay.store.transaction() as own:
                state = store_instances.state_of(own, instance_id)
        return TurnOutcome(
            instance_id,
            reason.value,
            state or "?",
            discarded=True,
            note="the instance changed during the turn (paused, cancelled or re-claimed); "
            "nothing was applied",
        )


def _advance(
    session: Session,
    instance: InstanceFields,
    plan: TurnPlan,
    now: datetime,
    *,
    replied: bool,
    replies_waiting: bool | None = None,
) -> State:
    """Apply the events that end the turn (:func:`relay.core.turn_endings.ending`);
    the last says where the conversation stands.

    ``replied``: the turn answered inbound messages. ``replies_waiting``: see
    :func:`transitions.apply_event`.
    """
    end = ending(State(instance.state), plan, replied=replied, follow_ups=instance.follow_up_count)
    if end.count is FollowUpCount.RESET:
        instance.follow_up_count = 0
    elif end.count is FollowUpCount.INCREMENT:
        instance.follow_up_count += 1
    final = State(instance.state)
    for event, reason in end.events:
        final = transitions.apply_event(
            session,
            instance,
            event,
            now=now,
            actor=AGENT,
            reason=reason,
            replies_waiting=replies_waiting,
        )
    return final


def _marks_todos(actions: list[Action]) -> bool:
    return any(action.name == "mark_todo_item" for action in actions)


# -- What an agent keeps besides its messages ---------------------------------------------
#
# Its structured answers to the todos (:func:`apply_answers`, once the runner checked
# them), and its scoped key-value state (:func:`load_state`, :func:`store_state`):
# ``app:`` keys shared by every conversation, ``contact:`` keys by every conversation
# with one contact, bare keys owned by one instance, and ``temp:`` keys that live for
# one turn and are never stored.


def apply_answers(
    session: Session,
    instance: InstanceFields,
    todos: Mapping[int, Todo],
    plan: TurnPlan,
    now: datetime,
) -> None:
    """Store a turn's accepted answers on their todos, each with an event."""
    for answer in plan.answers:
        todo = todos[answer.todo_id]
        todo.answer = answer.value
        todo.answer_message_id = answer.message_id
        todo.answered_at = now
        data = {
            "todo_id": answer.todo_id,
            "status": todo.status,
            "answer": answer.value,
            "message_id": answer.message_id,
        }
        transitions.record(session, EventKind.ANSWER, instance.id, data, now, actor="agent")


def scope_id_of(instance: InstanceFields | Row[Any], scope: Scope) -> str:
    if scope is Scope.APP:
        return ""
    if scope is Scope.CONTACT:
        return str(instance.contact_id)
    return instance.id


def load_state(
    session: Session, instances: Sequence[InstanceFields | Row[Any]]
) -> dict[str, dict[str, Any]]:
    """Each instance's scoped state in one query: app keys, overridden by the
    contact's, overridden by the instance's own."""
    pairs = [(str(i.contact_id), i.id) for i in instances]  # scope_id_of, per scope
    entries = state_entries.entries_for(
        session, {contact for contact, _ in pairs}, {own for _, own in pairs}
    )
    scoped: dict[tuple[str, str], dict[str, Any]] = {}
    for entry in entries:
        scoped.setdefault((entry.scope, entry.scope_id), {})[entry.key] = entry.value
    if not scoped:  # most batches: nobody has stored a key
        return {own: {} for _, own in pairs}
    app, contact_scope, own_scope = Scope.APP.value, Scope.CONTACT.value, Scope.INSTANCE.value
    states = {}
    for contact, own in pairs:
        state = dict(scoped.get((app, ""), {}))
        state.update(scoped.get((contact_scope, contact), {}))
        state.update(scoped.get((own_scope, own), {}))
        states[own] = state
    return states


def store_state(
    session: Session, instance: InstanceFields, key: str, value: Any, now: datetime
) -> None:
    """Upsert one scoped key; ``temp:`` keys live for the turn only and are not stored."""
    scope, name = split_scoped_key(key)
    if scope is Scope.TEMP:
        return
    scope_id = scope_id_of(instance, scope)
    entry = state_entries.entry(session, scope.value, scope_id, name)
    if entry is None:
        try:
            with session.begin_nested():
                session.add(
                    StateEntry(
                        scope=scope.value, scope_id=scope_id, key=name, value=value, updated_at=now
                    )
                )
                session.flush()
            return
        except IntegrityError:
            # Another turn wrote the same shared key first; ours is newer.
            entry = state_entries.entry(session, scope.value, scope_id, name)
            assert entry is not None
    entry.value = value
    entry.updated_at = now
