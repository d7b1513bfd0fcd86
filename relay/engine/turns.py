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
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from relay.agents.base import Agent, AgentError, make_agent
from relay.core.clock import isoformat
from relay.core.durations import parse_duration
from relay.core.errors import InvalidInput, RelayError
from relay.core.states import Event, State
from relay.core.turns import (
    Action,
    ContextMessage,
    ContextTodo,
    TurnContext,
    TurnPlan,
    TurnReason,
    validate_actions,
)
from relay.core.values import Author, MessageStatus, Scope, split_scoped_key
from relay.engine import policy, transitions
from relay.engine.service import queue_outbound
from relay.store import claims, queries
from relay.store.models import Contact, Instance, Message, StateEntry, Todo

if TYPE_CHECKING:
    from relay.engine.service import Relay

log = logging.getLogger("relay.turns")

AGENT = "agent"
MAX_TURN_ATTEMPTS = 5

REASONS = {
    State.CREATED.value: TurnReason.FIRST_MESSAGE,
    State.WAITING_FOR_AGENT.value: TurnReason.REPLY,
    State.HEARTBEAT_SCHEDULED.value: TurnReason.FOLLOW_UP,
    State.ACTIVE.value: TurnReason.RESUME,
}


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

    @property
    def lease(self) -> timedelta:
        return parse_duration(str(self.relay.config.get("turns.lease") or "5m"))

    def claim(self, limit: int, instance_id: str | None = None) -> list[tuple[str, int]]:
        with self.relay.store.transaction() as session:
            return claims.claim_turns(
                session, self.relay.now(), self.owner, self.lease, limit, instance_id=instance_id
            )

    def run_due(
        self, limit: int, *, should_stop: Callable[[], bool] = lambda: False
    ) -> list[TurnOutcome]:
        claimed = self.claim(limit)
        outcomes = []
        for position, (instance_id, version) in enumerate(claimed):
            if should_stop():
                self.release(claimed[position:])
                break
            outcomes.append(self.run_claimed(instance_id, version))
        return outcomes

    def release(self, claimed: list[tuple[str, int]]) -> None:
        """Give back leases on turns this worker will not run (it is stopping)."""
        with self.relay.store.transaction() as session:
            for instance_id, version in claimed:
                instance = self._locked(session, instance_id, version)
                if instance is not None:
                    instance.lease_owner = None
                    instance.lease_expires_at = None
                    instance.turn_attempts = max(0, instance.turn_attempts - 1)

    def run_claimed(self, instance_id: str, version: int) -> TurnOutcome:
        loaded = self._context(instance_id)
        if loaded is None:
            return self._discarded(instance_id, TurnReason.RESUME)
        context, agent_name, attempts = loaded
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
            actions = self._call_agent(agent_name, context)
        except AgentError as exc:
            return self._fail(instance_id, version, context.reason, f"agent error: {exc.message}")
        except RelayError as exc:
            return self._fail(instance_id, version, context.reason, exc.message)
        except Exception as exc:
            return self._fail(
                instance_id, version, context.reason, f"agent crashed: {type(exc).__name__}: {exc}"
            )
        return self._commit(instance_id, version, context, actions)

    # -- agent ---------------------------------------------------------------

    def agent(self, name: str) -> Agent:
        if name not in self._agents:
            config = self.relay.config
            settings: dict[str, Any] = {
                "timeout": config.get("agent.timeout"),
                "_data_dir": str(config.data_dir),
                "base_dir": str(config.base_dir),
            }
            settings.update(config.section(f"agent.{name}"))
            self._agents[name] = make_agent(name, settings)
        return self._agents[name]

    def _call_agent(self, name: str, context: TurnContext) -> list[Action]:
        agent = self.agent(name)
        try:
            return agent.run(context)
        except AgentError as exc:
            if not exc.transient:
                raise
            log.warning("instance %s: agent failed (%s); retrying once", context.instance_id, exc)
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
                return self._discarded(instance_id, context.reason)
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

    def _context(self, instance_id: str) -> tuple[TurnContext, str, int] | None:
        window = int(self.relay.config.get("agent.transcript_window") or 50)
        with self.relay.store.transaction() as session:
            instance = session.scalar(select(Instance).where(Instance.id == instance_id))
            if instance is None or instance.state not in REASONS:
                return None
            person = session.get(Contact, instance.contact_id)
            assert person is not None
            reason = REASONS[instance.state]
            context = TurnContext(
                instance_id=instance.id,
                reason=reason,
                objective=instance.objective,
                contact=person.address,
                todos=tuple(
                    ContextTodo(t.position, t.text, t.status)
                    for t in queries.todos_of(session, instance.id)
                ),
                transcript=tuple(
                    _context_message(m)
                    for m in queries.transcript_of(session, instance.id, window, said_only=True)
                ),
                new_messages=tuple(
                    _context_message(m) for m in queries.unprocessed_inbound(session, instance.id)
                ),
                state=_load_state(session, instance),
                follow_up_number=(
                    instance.follow_up_count + 1 if reason is TurnReason.FOLLOW_UP else 0
                ),
                max_followups=instance.max_followups,
                now=isoformat(self.relay.now()) or "",
            )
            return context, instance.agent, instance.turn_attempts

    # -- commit --------------------------------------------------------------

    def _locked(self, session: Session, instance_id: str, version: int) -> Instance | None:
        instance = claims.lock_instance(session, instance_id)
        if instance is None or instance.version != version or instance.lease_owner != self.owner:
            return None
        return instance

    def _commit(
        self, instance_id: str, version: int, context: TurnContext, actions: list[Action]
    ) -> TurnOutcome:
        with self.relay.store.transaction() as session:
            instance = self._locked(session, instance_id, version)
            if instance is None:
                return self._discarded(instance_id, context.reason)
            try:
                plan = validate_actions(actions, {t.id for t in context.todos})
            except InvalidInput as exc:
                return self._intervene(
                    session, instance, context.reason, f"invalid agent action: {exc.message}"
                )
            now = self.relay.now()
            self._apply_plan(session, instance, plan, context, now)
            final = _advance(session, instance, plan, now)
            for note in plan.notes:
                log.info("instance %s: %s", instance_id, note)
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
    ) -> None:
        proactive = context.reason in (TurnReason.FIRST_MESSAGE, TurnReason.FOLLOW_UP)
        for text in plan.messages:
            queue_outbound(session, instance, text, Author.AGENT, now, proactive=proactive)
        todos = {t.position: t for t in queries.todos_of(session, instance.id)}
        for todo_id, status in plan.todo_updates:
            todo: Todo = todos[todo_id]
            todo.status = status.value
            todo.updated_at = now
        for key, value in plan.state_updates:
            _store_state(session, instance, key, value, now)
        seen = {m.id for m in context.new_messages}
        for message in queries.unprocessed_inbound(session, instance.id):
            if message.id in seen:
                message.status = MessageStatus.PROCESSED.value
                message.processed_at = now
        if plan.next_heartbeat is not None:
            instance.heartbeat_override_seconds = int(plan.next_heartbeat.total_seconds())

    # -- failure -------------------------------------------------------------

    def _fail(self, instance_id: str, version: int, reason: TurnReason, why: str) -> TurnOutcome:
        with self.relay.store.transaction() as session:
            instance = self._locked(session, instance_id, version)
            if instance is None:
                return self._discarded(instance_id, reason)
            return self._intervene(session, instance, reason, why)

    def _intervene(
        self, session: Session, instance: Instance, reason: TurnReason, why: str
    ) -> TurnOutcome:
        log.warning("instance %s: needs a human: %s", instance.id, why)
        final = transitions.apply_event(
            session,
            instance,
            Event.REQUEST_INTERVENTION,
            now=self.relay.now(),
            actor=AGENT,
            reason=why,
        )
        return TurnOutcome(instance.id, reason.value, final.value, note=why)

    def _discarded(self, instance_id: str, reason: TurnReason) -> TurnOutcome:
        log.info("instance %s: changed during the turn; its result was discarded", instance_id)
        with self.relay.store.transaction() as session:
            state = session.scalar(select(Instance.state).where(Instance.id == instance_id))
        return TurnOutcome(
            instance_id,
            reason.value,
            state or "?",
            discarded=True,
            note="the instance changed during the turn (paused, cancelled or re-claimed); "
            "nothing was applied",
        )


def _advance(session: Session, instance: Instance, plan: TurnPlan, now: datetime) -> State:
    """Move the instance to where the turn ends: always somewhere live or terminal."""
    state = State(instance.state)

    def go(event: Event, reason: str | None = None) -> State:
        return transitions.apply_event(
            session, instance, event, now=now, actor=AGENT, reason=reason
        )

    if plan.intervention_reason:
        return go(Event.REQUEST_INTERVENTION, plan.intervention_reason)
    if state is State.HEARTBEAT_SCHEDULED:
        if plan.end_reason:
            return go(Event.END_CONVERSATION, plan.end_reason)
        if plan.messages:
            instance.follow_up_count += 1
            return go(Event.FOLLOWUP_SENT, f"follow-up {instance.follow_up_count}")
        return go(Event.WAIT_FOR_REPLY, "the agent chose to wait")
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


def _context_message(message: Message) -> ContextMessage:
    return ContextMessage(
        id=message.id,
        direction=message.direction,
        author=message.author,
        text=message.body,
        at=isoformat(message.created_at) or "",
    )


def _scope_id(instance: Instance, scope: Scope) -> str:
    if scope is Scope.APP:
        return ""
    if scope is Scope.CONTACT:
        return str(instance.contact_id)
    return instance.id


def _load_state(session: Session, instance: Instance) -> dict[str, Any]:
    pairs = [(s.value, _scope_id(instance, s)) for s in (Scope.APP, Scope.CONTACT, Scope.INSTANCE)]
    state: dict[str, Any] = {}
    for scope, scope_id in pairs:
        for entry in session.scalars(
            select(StateEntry).where(StateEntry.scope == scope, StateEntry.scope_id == scope_id)
        ):
            state[entry.key] = entry.value
    return state


def _store_state(session: Session, instance: Instance, key: str, value: Any, now: datetime) -> None:
    """Upsert one scoped key; ``temp:`` keys live for the turn only and are not stored."""
    scope, name = split_scoped_key(key)
    if scope is Scope.TEMP:
        return
    scope_id = _scope_id(instance, scope)
    where = (
        StateEntry.scope == scope.value,
        StateEntry.scope_id == scope_id,
        StateEntry.key == name,
    )
    entry = session.scalar(select(StateEntry).where(*where))
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
            entry = session.scalar(select(StateEntry).where(*where))
            assert entry is not None
    entry.value = value
    entry.updated_at = now
