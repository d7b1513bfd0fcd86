"""Agent turns: claim, build the context, run the agent outside any transaction,
and commit the result in one transaction only if nothing changed meanwhile.

Claim and commit are separate transactions on purpose: an LLM call may take
seconds, and holding a row lock (or SQLite's write lock) that long would stall
every other command. The claim's lease stops another worker from running the
same turn; the instance's ``version`` lets the operator win: a pause or cancel
during the turn bumps it, and the turn's decisions are dropped.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from relay.agents.base import Agent, AgentError, make_agent
from relay.core.clock import isoformat
from relay.core.errors import InvalidInput, RelayError
from relay.core.states import Event, State
from relay.core.turns import (
    Action,
    TurnContext,
    TurnPlan,
    TurnReason,
)
from relay.core.values import Author, MessageStatus
from relay.engine import answers, events, policy, scoped_state, transitions
from relay.engine.backends import agent_settings
from relay.engine.inbound import opt_out as record_opt_out
from relay.engine.outgoing import outbound_row
from relay.engine.turn_context import read_contexts
from relay.store import claims, queries
from relay.store.models import Contact, Instance, Message, Todo, table_of

if TYPE_CHECKING:
    from relay.engine.service import Relay

log = logging.getLogger("relay.turns")

AGENT = "agent"
NOTES_KEY = "relay:last_turn_notes"
MAX_TURN_ATTEMPTS = 5
#: At most this many turns share one context read and one commit transaction.
TURN_BATCH = 100
#: A batch whose agents all answered within this many seconds may grow (up to
#: TURN_BATCH); a slower one shrinks back to a single turn, so with an LLM agent
#: every turn is committed as soon as its own agent has answered.
BATCH_SECONDS = 0.2


@dataclass(frozen=True)
class _Loaded:
    """Rows a batch of turn commits needs, read once for the whole batch under its
    locks, and the append-only rows it writes (outbox messages, transition log),
    inserted with one statement each just before the batch's transaction commits."""

    todos: dict[str, list[Todo]]
    inbound: dict[str, list[Message]]
    messages: list[dict[str, Any]] = field(default_factory=list)
    log_rows: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class TurnOutcome:
    instance_id: str
    reason: str
    state: str
    messages: tuple[str, ...] = ()
    discarded: bool = False
    note: str | None = None


@dataclass
class TurnRunner:
    """Runs turns for one worker (a CLI command or a daemon) identified by ``owner``."""

    relay: Relay
    owner: str
    _agents: dict[str, Agent] = field(default_factory=dict)
    # How many turns go in the next batch: learnt from how fast the agents were,
    # and kept from one call to the next.
    batch_size: int = 1

    @property
    def lease(self) -> timedelta:
        return self.relay.config.settings.turns.lease

    def claim(self, limit: int, instance_id: str | None = None) -> list[tuple[str, int]]:
        with self.relay.store.transaction() as session:
            return claims.claim_turns(
                session, self.relay.now(), self.owner, self.lease, limit, instance_id=instance_id
            )

    def run_due(
        self,
        limit: int,
        *,
        should_stop: Callable[[], bool] = lambda: False,
        after_batch: Callable[[], object] | None = None,
    ) -> list[TurnOutcome]:
        """Claim due turns and run them in batches (see :meth:`run_batch`).

        ``should_stop`` is checked between turns: a stopping worker finishes the
        turn in progress, commits what has run, and gives back the other leases.
        ``after_batch`` runs after each committed batch (the pulse delivers what
        the batch wrote, so the first follow-ups need not wait for the last turn).
        """
        claimed = self.claim(limit)
        outcomes: list[TurnOutcome] = []
        position = 0
        while position < len(claimed):
            if should_stop():
                self.release(claimed[position:])
                break
            chunk = claimed[position : position + self.batch_size]
            started = time.monotonic()
            done = self.run_batch(chunk, should_stop=should_stop)
            quick = time.monotonic() - started < BATCH_SECONDS
            self.batch_size = min(TURN_BATCH, self.batch_size * 4) if quick else 1
            outcomes.extend(done)
            position += len(done)
            if after_batch is not None:
                after_batch()
        return outcomes

    def run_batch(
        self, claimed: list[tuple[str, int]], *, should_stop: Callable[[], bool] = lambda: False
    ) -> list[TurnOutcome]:
        """Run claimed turns with one context read and one commit for all of them.

        Each turn's effects still go together (its state change, transition row,
        transcript, todos and outbox rows), each is checked against its own
        version and lease, and agents still run outside any transaction. Stops
        early when ``should_stop`` says so, returning outcomes for a prefix only.
        """
        contexts = read_contexts(self.relay, self.owner, claimed)
        outcomes: dict[int, TurnOutcome] = {}
        ready: list[tuple[int, tuple[str, int, TurnContext, list[Action]]]] = []
        for index, (instance_id, version) in enumerate(claimed):
            if index and should_stop():
                claimed = claimed[:index]
                break
            loaded = contexts.get(instance_id)
            if loaded is None:
                outcomes[index] = self._discarded(instance_id, TurnReason.RESUME)
                continue
            decided = self._decide(instance_id, version, *loaded)
            if isinstance(decided, TurnOutcome):
                outcomes[index] = decided
            else:
                ready.append((index, (instance_id, version, loaded[0], decided)))
        committed = self._commit_many([item for _, item in ready])
        outcomes.update(zip([index for index, _ in ready], committed, strict=True))
        return [outcomes[index] for index in range(len(claimed))]

    def release(self, claimed: list[tuple[str, int]]) -> None:
        """Give back leases on turns this worker will not run (it is stopping)."""
        with self.relay.store.transaction() as session:
            locked = claims.lock_instances(session, [instance_id for instance_id, _ in claimed])
            for instance_id, version in claimed:
                instance = locked.get(instance_id)
                if instance is not None and self._ours(instance, version):
                    instance.lease_owner = None
                    instance.lease_expires_at = None
                    instance.turn_attempts = max(0, instance.turn_attempts - 1)

    def run_claimed(self, instance_id: str, version: int) -> TurnOutcome:
        return self.run_batch([(instance_id, version)])[0]

    def _decide(
        self, instance_id: str, version: int, context: TurnContext, agent_name: str, attempts: int
    ) -> TurnOutcome | list[Action]:
        """The agent's actions for one turn, or its outcome if it ends before the commit."""
        held = self._hold_for_window(instance_id, version, context)
        if held is not None:
            return held
        if attempts > MAX_TURN_ATTEMPTS:
            return self._fail(
                instance_id,
                version,
                context.reason,
                f"the turn was started {attempts - 1} times without finishing",
            )
        try:
            # An answer of the wrong kind is refused back to the agent to correct.
            return answers.until_accepted(lambda c: self._call_agent(agent_name, c), context)
        except AgentError as exc:
            return self._fail(instance_id, version, context.reason, f"agent error: {exc.message}")
        except RelayError as exc:
            return self._fail(instance_id, version, context.reason, exc.message)
        except Exception as exc:
            return self._fail(
                instance_id, version, context.reason, f"agent crashed: {type(exc).__name__}: {exc}"
            )

    # -- agent ---------------------------------------------------------------

    def agent(self, name: str) -> Agent:
        if name not in self._agents:
            self._agents[name] = make_agent(name, agent_settings(self.relay.config, name))
        return self._agents[name]

    def _call_agent(self, name: str, context: TurnContext) -> list[Action]:
        agent = self.agent(name)
        try:
            return agent.run(context)
        except AgentError as exc:
            if not exc.transient:
                raise
            log.warning(
                "instance %s: agent failed; retrying once",
                context.instance_id,
                extra={"instance_id": context.instance_id},
            )
            log.debug("instance %s: agent error: %s", context.instance_id, exc)
        try:
            return agent.run(context)
        except AgentError as exc:
            raise AgentError(f"{exc.message} (after one retry)") from exc

    # -- context -------------------------------------------------------------

    def _hold_for_window(
        self, instance_id: str, version: int, context: TurnContext
    ) -> TurnOutcome | None:
        """A first message outside the contact's sending window waits for it to open."""
        if context.reason is not TurnReason.FIRST_MESSAGE:
            return None
        with self.relay.store.transaction() as session:
            instance = self._locked(session, instance_id, version)
            if instance is None:
                return self._discarded(instance_id, context.reason, session)
            now = self.relay.now()
            opens = policy.next_window_open(session, instance, self.relay.config, now)
            if opens <= now:
                return None
            instance.not_before = opens
            instance.lease_owner = None
            instance.lease_expires_at = None
            instance.turn_attempts = 0
            note = f"outside the sending window; first message held until {isoformat(opens)}"
            return TurnOutcome(instance_id, context.reason.value, instance.state, note=note)

    # -- commit --------------------------------------------------------------

    def _ours(self, instance: Instance, version: int) -> bool:
        """Whether this worker's claim on the (locked) instance still holds."""
        return instance.version == version and instance.lease_owner == self.owner

    def _locked(self, session: Session, instance_id: str, version: int) -> Instance | None:
        instance = claims.lock_instance(session, instance_id)
        if instance is None or not self._ours(instance, version):
            return None
        return instance

    def _commit_many(
        self, items: list[tuple[str, int, TurnContext, list[Action]]]
    ) -> list[TurnOutcome]:
        """Commit several turns' results in one transaction, each turn checked and
        applied on its own locked row; should that transaction fail, they are
        committed one by one, so one bad turn cannot hold back the others."""
        if not items:
            return []
        try:
            with self.relay.store.transaction() as session:
                ids = [item[0] for item in items]
                # Todos are loaded (as objects to update) only for turns that mark one.
                marking = [item[0] for item in items if _marks_todos(item[3])]
                locked = claims.lock_instances(session, ids)
                loaded = _Loaded(
                    queries.todos_for(session, marking) if marking else {},
                    queries.unprocessed_inbound_for(session, ids),
                )
                outcomes = [
                    self._commit_in(session, locked.get(item[0]), *item, loaded=loaded)
                    for item in items
                ]
                if loaded.messages:
                    session.execute(insert(table_of(Message)), loaded.messages)
                    events.record_outbound(session, loaded.messages, self.relay.now())
                transitions.write_log(session, loaded.log_rows)
                return outcomes
        except Exception:
            if len(items) == 1:
                raise
            log.warning("committing %s turns together failed; committing one by one", len(items))
            return [self._commit_many([item])[0] for item in items]

    def _commit_in(
        self,
        session: Session,
        instance: Instance | None,
        instance_id: str,
        version: int,
        context: TurnContext,
        actions: list[Action],
        *,
        loaded: _Loaded,
    ) -> TurnOutcome:
        if instance is None or not self._ours(instance, version):
            return self._discarded(instance_id, context.reason, session)
        try:
            plan = answers.plan_for(actions, context)
        except InvalidInput as exc:
            return self._intervene(
                session, instance, context.reason, f"invalid agent action: {exc.message}"
            )
        seen = {m.id for m in context.new_messages}
        unseen = [m for m in loaded.inbound[instance_id] if m.id not in seen]
        if plan.stale_given(len(unseen)):
            return self._reconsider(instance, context.reason)
        now = self.relay.now()
        self._apply_plan(session, instance, plan, context, now, loaded)
        if plan.opt_out_reason is not None:
            return self._opt_out(session, instance, context, plan.opt_out_reason, now)
        # Inbound that arrived after the context was read is still unprocessed:
        # entering WAITING_FOR_REPLY answers it (known here without a query).
        waiting = any(m.status == MessageStatus.RECEIVED.value for m in loaded.inbound[instance_id])
        final = _advance(
            session,
            instance,
            plan,
            now,
            replied=bool(context.new_messages),
            replies_waiting=waiting,
            log_rows=loaded.log_rows,
        )
        for note in plan.notes:
            log.info("instance %s: %s", instance_id, note, extra={"instance_id": instance_id})
        if plan.notes:
            # The agent's next turn sees what relay could not do (place_call) in
            # its state, so it does not assume the call happened.
            scoped_state.store(session, instance, NOTES_KEY, list(plan.notes), now)
        return TurnOutcome(
            instance_id,
            context.reason.value,
            final.value,
            plan.messages,
            note="; ".join(plan.notes) or None,
        )

    def _apply_plan(
        self,
        session: Session,
        instance: Instance,
        plan: TurnPlan,
        context: TurnContext,
        now: datetime,
        loaded: _Loaded,
    ) -> None:
        proactive = context.reason in (TurnReason.FIRST_MESSAGE, TurnReason.FOLLOW_UP)
        for text in plan.messages:
            # Written with the batch's other messages, in one statement, at its commit.
            loaded.messages.append(
                outbound_row(instance, text, Author.AGENT, now, proactive=proactive)
            )
        todos = {t.position: t for t in loaded.todos.get(instance.id, ())}
        for todo_id, status in plan.todo_updates:
            todo: Todo = todos[todo_id]
            todo.status = status.value
            todo.updated_at = now
        answers.apply(session, instance, todos, plan, now)
        for key, value in plan.state_updates:
            scoped_state.store(session, instance, key, value, now)
        seen = {m.id for m in context.new_messages}
        for message in loaded.inbound[instance.id]:
            if message.id in seen:
                message.status = MessageStatus.PROCESSED.value
                message.processed_at = now
        if plan.next_heartbeat is not None:
            instance.heartbeat_override_seconds = int(plan.next_heartbeat.total_seconds())

    def _opt_out(
        self,
        session: Session,
        instance: Instance,
        context: TurnContext,
        reason: str,
        now: datetime,
    ) -> TurnOutcome:
        """The agent understood "leave me alone": the same opt-out as a STOP keyword
        (this conversation ends, queued ones fail, nothing more is sent)."""
        person = session.get(Contact, instance.contact_id)
        assert person is not None
        record_opt_out(session, person, now, reason=f"agent: {reason}")
        log.info(
            "instance %s: the agent recorded an opt-out",
            instance.id,
            extra={"instance_id": instance.id},
        )
        return TurnOutcome(instance.id, context.reason.value, instance.state)

    def _reconsider(self, instance: Instance, reason: TurnReason) -> TurnOutcome:
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

    # -- failure -------------------------------------------------------------

    def _fail(self, instance_id: str, version: int, reason: TurnReason, why: str) -> TurnOutcome:
        with self.relay.store.transaction() as session:
            instance = self._locked(session, instance_id, version)
            if instance is None:
                return self._discarded(instance_id, reason, session)
            return self._intervene(session, instance, reason, why)

    def _intervene(
        self, session: Session, instance: Instance, reason: TurnReason, why: str
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

    def _discarded(
        self, instance_id: str, reason: TurnReason, session: Session | None = None
    ) -> TurnOutcome:
        """The outcome of a turn whose instance changed; inside a transaction, pass its
        session (a second transaction would wait forever for SQLite's write lock)."""
        log.info(
            "instance %s: changed during the turn; its result was discarded",
            instance_id,
            extra={"instance_id": instance_id},
        )
        query = select(Instance.state).where(Instance.id == instance_id)
        if session is not None:
            state = session.scalar(query)
        else:
            with self.relay.store.transaction() as own:
                state = own.scalar(query)
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
    instance: Instance,
    plan: TurnPlan,
    now: datetime,
    *,
    replied: bool,
    replies_waiting: bool | None = None,
    log_rows: list[dict[str, Any]] | None = None,
) -> State:
    """Move the instance to where the turn ends: always somewhere live or terminal.

    ``replied``: the turn answered inbound messages. In a follow-up turn that means
    the contact wrote after the heartbeat fired: the silence being counted is over,
    so the count starts again (as a reply in WAITING_FOR_REPLY resets it).
    ``replies_waiting`` and ``log_rows``: see :func:`transitions.apply_event`.
    """
    state = State(instance.state)

    def go(event: Event, reason: str | None = None) -> State:
        return transitions.apply_event(
            session,
            instance,
            event,
            now=now,
            actor=AGENT,
            reason=reason,
            replies_waiting=replies_waiting,
            log_rows=log_rows,
        )

    if plan.intervention_reason:
        return go(Event.REQUEST_INTERVENTION, plan.intervention_reason)
    if state is State.HEARTBEAT_SCHEDULED:
        return _after_follow_up(instance, plan, go, replied=replied)
    if state is State.CREATED:
        go(Event.AGENT_SENDS_FIRST_MESSAGE)
    elif state is State.WAITING_FOR_AGENT:
        if plan.end_reason and not plan.messages:
            return go(Event.END_CONVERSATION, plan.end_reason)
        go(Event.AGENT_PROCESSES_REPLY)
    if plan.end_reason:
        return go(Event.END_CONVERSATION, plan.end_reason)
    if plan.messages:
        return go(Event.MESSAGE_SENT)
    return go(Event.WAIT_FOR_REPLY, "the agent chose to wait")


def _after_follow_up(
    instance: Instance, plan: TurnPlan, go: Callable[..., State], *, replied: bool
) -> State:
    if plan.end_reason:
        return go(Event.END_CONVERSATION, plan.end_reason)
    if replied:
        instance.follow_up_count = 0
        if plan.messages:
            return go(Event.FOLLOWUP_SENT, "answered a reply that came before the follow-up")
    elif plan.messages:
        instance.follow_up_count += 1
        return go(Event.FOLLOWUP_SENT, f"follow-up {instance.follow_up_count}")
    return go(Event.WAIT_FOR_REPLY, "the agent chose to wait")


def _marks_todos(actions: list[Action]) -> bool:
    return any(action.name == "mark_todo_item" for action in actions)
