"""Agent turns: claim, read what the agent is shown (the context, for a batch of
claimed turns at once), run the agent outside any transaction, and commit the
result in one transaction only if nothing changed meanwhile
(:mod:`relay.engine.turns.commit`), once its answers are checked (the last section).

Claim and commit are separate transactions on purpose: an LLM call may take
seconds, and holding a row lock (or SQLite's write lock) that long would stall
every other command. The claim's lease stops another worker from running the
same turn; the instance's ``version`` lets the operator win: a pause or cancel
during the turn bumps it, and the turn's decisions are dropped. The one
exception is an agent that answers at once, with no I/O (``at_once``, the
scripted agent): its follow-ups run inside the transaction that fires them
(:meth:`TurnRunner.run_at_once`), so the row is written once, not twice.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from sqlalchemy import Row
from sqlalchemy.orm import Session

from relay.agents.base import Agent, AgentError
from relay.core.answers import AnswerSpec
from relay.core.clock import isoformat
from relay.core.errors import InvalidInput, RelayError
from relay.core.turns import (
    TURN_REASONS,
    Action,
    ContextMessage,
    ContextTodo,
    RecordedAnswer,
    Refusal,
    TurnContext,
    TurnPlan,
    TurnReason,
    validate_actions,
)
from relay.engine.conversation import policy
from relay.engine.runtime import Channels, Runtime, build_agent
from relay.engine.turns.commit import Decided, TurnCommitter, TurnOutcome, load_state
from relay.store import claims, queries, turn_rows
from relay.store.hotpath import locked_rows
from relay.store.hotpath.locked_rows import InstanceFields, InstanceRow
from relay.store.models import Message

if TYPE_CHECKING:
    from relay.engine.outbox.dispatcher import Dispatcher
    from relay.engine.outbox.screen import Handover

log = logging.getLogger("relay.turns")

REASONS = {state.value: reason for state, reason in TURN_REASONS.items()}


def read_contexts(
    relay: Runtime,
    owner: str,
    claimed: list[tuple[str, int]],
    *,
    within: tuple[Session, Mapping[str, InstanceRow]] | None = None,
) -> dict[str, tuple[TurnContext, str, int]]:
    """Each claimed turn's context, agent name and attempt count; ``within``: in a
    firing's transaction, on its rows fired in memory (``heartbeat.AtOnce``)."""
    if within is None:
        with relay.store.transaction() as session:
            return _read_contexts(relay, owner, claimed, session, {})
    return _read_contexts(relay, owner, claimed, *within)


def _read_contexts(
    relay: Runtime,
    owner: str,
    claimed: list[tuple[str, int]],
    session: Session,
    fired: Mapping[str, InstanceRow],
) -> dict[str, tuple[TurnContext, str, int]]:
    """Each claimed turn's context, agent name and attempt count, read in one
    transaction. A turn whose claim is no longer ours is left out: the instance
    changed, or the lease ran out and another worker claimed it (running the
    agent then would only waste a model call, or repeat a command's effects)."""
    window = relay.config.settings.agent.transcript_window
    versions = dict(claimed)
    # Plain rows throughout: nothing read here is changed, and ORM objects
    # for a batch's instances, todos and transcripts cost more than the SQL.
    read = turn_rows.context_rows(session, versions)
    instances: list[Any] = [  # context rows, or _Fired ones
        row
        for row in (_Fired(row, fired[row.id]) if row.id in fired else row for row in read)
        if row.state in REASONS and row.version == versions[row.id] and row.lease_owner == owner
    ]
    ids = [row.id for row in instances]
    todos = queries.todo_rows_for(session, ids)
    transcripts = turn_rows.transcripts_for(session, ids, window, said_only=True)
    inbound = turn_rows.inbound_rows_for(session, ids)
    states = load_state(session, instances)
    now = isoformat(relay.now()) or ""
    found = {}
    for row in instances:
        reason = REASONS[row.state]
        context = TurnContext(
            instance_id=row.id,
            reason=reason,
            objective=row.objective,
            contact=row.address,
            todos=tuple(context_todo(t) for t in todos[row.id]),
            transcript=tuple(_context_message(m) for m in transcripts[row.id]),
            new_messages=tuple(_context_message(m) for m in inbound[row.id]),
            state=states[row.id],
            follow_up_number=(row.follow_up_count + 1 if reason is TurnReason.FOLLOW_UP else 0),
            max_followups=row.max_followups,
            now=now,
            result_schema=row.result_schema,
            contact_fields=dict(row.fields or {}),
            campaign=row.campaign,
        )
        found[row.id] = (context, row.agent, row.turn_attempts)
    return found


class _Fired:
    """A turn's context row read in the transaction that fired its heartbeat but
    has not written it yet: what the firing changed comes from the fired row
    (``FIRED`` holds every column a firing assigns: a test checks), the rest from
    the row read (what a context is made of copied, any other column asked of it)."""

    FIRED = (
        "state", "version", "lease_owner", "lease_expires_at", "turn_attempts",
        "next_heartbeat_at", "outcome", "updated_at",
    )  # fmt: skip
    READ = (
        "id", "contact_id", "objective", "address", "fields", "result_schema", "campaign",
        "agent", "follow_up_count", "max_followups",
    )  # fmt: skip
    __slots__ = (*FIRED, *READ, "_read")

    def __init__(self, read: Row[Any], fired: InstanceRow) -> None:
        self._read = read
        (
            self.id, self.contact_id, self.objective, self.address, self.fields,
            self.result_schema, self.campaign, self.agent, self.follow_up_count,
            self.max_followups,
        ) = (
            read.id, read.contact_id, read.objective, read.address, read.fields,
            read.result_schema, read.campaign, read.agent, read.follow_up_count,
            read.max_followups,
        )  # fmt: skip
        self.state = fired.state
        self.version = fired.version
        self.lease_owner = fired.lease_owner
        self.lease_expires_at = fired.lease_expires_at
        self.turn_attempts = fired.turn_attempts
        self.next_heartbeat_at = fired.next_heartbeat_at
        self.outcome = fired.outcome
        self.updated_at = fired.updated_at

    def __getattr__(self, name: str) -> Any:
        return getattr(self._read, name)


def _context_message(message: Message | Row[Any]) -> ContextMessage:
    return ContextMessage(
        id=message.id,
        direction=message.direction,
        author=message.author,
        text=message.body,
        at=isoformat(message.created_at) or "",
    )


MAX_TURN_ATTEMPTS = 5
#: At most this many turns share one context read and one commit transaction.
TURN_BATCH = 500
#: A batch whose agents all answered within this many seconds may grow (up to
#: TURN_BATCH); a slower one shrinks back to a single turn, so with an LLM agent
#: every turn is committed as soon as its own agent has answered. Only the time in
#: the agents counts: reads and commits slowed by a busy machine (several daemons
#: on few cores) must not shrink the batches, or each turn pays for a transaction
#: of its own just when the machine can least afford it.
BATCH_SECONDS = 0.2


@dataclass
class _Batch:
    """A batch's turns once their agents were asked: the outcomes of those that ended
    before the commit, and the decisions to commit, each by its place in the batch."""

    taken: int
    ended: dict[int, TurnOutcome] = field(default_factory=dict)
    ready: list[tuple[int, tuple[str, int, TurnContext, Decided]]] = field(default_factory=list)

    def in_order(self, committed: list[TurnOutcome]) -> list[TurnOutcome]:
        """Every taken turn's outcome, in the batch's order, with the commit's."""
        outcomes = dict(self.ended)
        outcomes.update(zip([index for index, _ in self.ready], committed, strict=True))
        return [outcomes[index] for index in range(self.taken)]


@dataclass
class TurnRunner:
    """Runs turns for one worker (a CLI command or a daemon) identified by ``owner``."""

    relay: Runtime
    owner: str
    _agents: dict[str, Agent] = field(default_factory=dict)
    # How many turns go in the next batch: learnt from how fast the agents were,
    # and kept from one call to the next.
    batch_size: int = 1
    # Seconds spent in agent calls since the current batch began, by ``timer``.
    _agent_seconds: float = field(default=0.0, init=False, repr=False)
    # What turns run in a firing's transaction wrote, handed on once it commits.
    _written: list[Handover | None] = field(default_factory=list, init=False, repr=False)
    timer: Callable[[], float] = time.monotonic
    #: A pulse's dispatcher: the turns' new outbox rows are leased to it in their
    #: commit and sent right after each batch (:meth:`Dispatcher.deliver_handed`).
    outbox: Dispatcher | None = None
    committer: TurnCommitter = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.committer = TurnCommitter(self.relay, self.owner, self.outbox)

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
        leased: list[tuple[str, int]] | None = None,
        should_stop: Callable[[], bool] = lambda: False,
        after_batch: Callable[[], object] | None = None,
    ) -> list[TurnOutcome]:
        """Claim due turns and run them in batches (see :meth:`run_batch`).

        ``leased``: turns this worker already holds (the follow-ups a heartbeat
        firing leased to it); they run first, and fewer are claimed besides.

        ``should_stop`` is checked between turns: a stopping worker finishes the
        turn in progress, commits what has run, and gives back the other leases.
        ``after_batch`` runs after each committed batch (the pulse delivers what
        the batch wrote, so the first follow-ups need not wait for the last turn).
        """
        claimed = list(leased or [])
        if len(claimed) < limit:
            claimed += self.claim(limit - len(claimed))
        outcomes: list[TurnOutcome] = []
        position = 0
        while position < len(claimed):
            if should_stop():
                self.release(claimed[position:])
                break
            chunk = claimed[position : position + self.batch_size]
            self._agent_seconds = 0.0
            done = self.run_batch(chunk, should_stop=should_stop)
            quick = self._agent_seconds < BATCH_SECONDS
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
        decided = self._decide_each(claimed, contexts, should_stop=should_stop)
        committed = self.committer.commit_many([item for _, item in decided.ready])
        return decided.in_order(committed)

    def _decide_each(
        self,
        claimed: list[tuple[str, int]],
        contexts: dict[str, tuple[TurnContext, str, int]],
        *,
        should_stop: Callable[[], bool] = lambda: False,
        within: tuple[Session, Mapping[str, InstanceFields]] | None = None,
    ) -> _Batch:
        """Ask each claimed turn's agent; ``should_stop`` cuts the rest of the batch."""
        batch = _Batch(len(claimed))
        for index, (instance_id, version) in enumerate(claimed):
            if index and should_stop():
                batch.taken = index
                break
            loaded = contexts.get(instance_id)
            if loaded is None:
                session = within[0] if within else None
                batch.ended[index] = self.committer.discarded(
                    instance_id, TurnReason.RESUME, session
                )
                continue
            decided = self._decide(instance_id, version, *loaded, within=within)
            if isinstance(decided, TurnOutcome):
                batch.ended[index] = decided
            else:
                batch.ready.append((index, (instance_id, version, loaded[0], decided)))
        return batch

    # -- follow-ups run in the firing's transaction (heartbeat.AtOnce) ---------

    def takes_at_once(self, agent: str) -> bool:
        """An agent that answers at once (no I/O: ``at_once = True``) may run
        inside the transaction that fires its follow-up."""
        try:
            return bool(getattr(self.agent(agent), "at_once", False))
        except RelayError:  # an agent that cannot be built: its own turn says why
            return False

    def run_at_once(
        self, session: Session, rows: dict[str, InstanceRow], claimed: list[tuple[str, int]]
    ) -> list[TurnOutcome]:
        """Run the follow-ups a firing leased, in its transaction, on its rows."""
        contexts = read_contexts(self.relay, self.owner, claimed, within=(session, rows))
        decided = self._decide_each(claimed, contexts, within=(session, rows))
        committed, handover = self.committer.commit_in(
            session, [item for _, item in decided.ready], rows
        )
        self._written.append(handover)
        return decided.in_order(committed)

    def at_once_done(self, committed: bool) -> None:
        """Hand the dispatcher what committed turns wrote; forget a rolled-back one's."""
        written, self._written = self._written, []
        if committed and self.outbox is not None:
            for handover in written:
                if handover is not None:
                    self.outbox.adopt(handover)

    def release(self, claimed: list[tuple[str, int]]) -> None:
        """Give back leases on turns this worker will not run (it is stopping)."""
        with self.relay.store.transaction() as session:
            locked = claims.lock_instances(session, [instance_id for instance_id, _ in claimed])
            for instance_id, version in claimed:
                instance = locked.get(instance_id)
                if instance is not None and self.committer.ours(instance, version):
                    instance.lease_owner = None
                    instance.lease_expires_at = None
                    instance.turn_attempts = max(0, instance.turn_attempts - 1)
            locked_rows.write(session, locked.values())

    def run_claimed(self, instance_id: str, version: int) -> TurnOutcome:
        return self.run_batch([(instance_id, version)])[0]

    def _decide(
        self,
        instance_id: str,
        version: int,
        context: TurnContext,
        agent_name: str,
        attempts: int,
        *,
        within: tuple[Session, Mapping[str, InstanceFields]] | None = None,
    ) -> TurnOutcome | Decided:
        """The agent's actions for one turn, or its outcome if it ends before the commit;
        ``within``: in a firing's transaction, on its locked rows (a follow-up's turn)."""
        held = None if within else self._hold_for_window(instance_id, version, context)
        if held is not None:
            return held
        fail = partial(self._fail, instance_id, version, context.reason, within=within)
        if attempts > MAX_TURN_ATTEMPTS:
            return fail(f"the turn was started {attempts - 1} times without finishing")
        try:
            # An answer of the wrong kind is refused back to the agent to correct.
            return until_accepted(lambda c: self._call_agent(agent_name, c), context)
        except AgentError as exc:
            return fail(f"agent error: {exc.message}")
        except RelayError as exc:
            return fail(exc.message)
        except Exception as exc:
            return fail(f"agent crashed: {type(exc).__name__}: {exc}")

    # -- agent ---------------------------------------------------------------

    def agent(self, name: str) -> Agent:
        if name not in self._agents:
            self._agents[name] = build_agent(self.relay.config, name)
        return self._agents[name]

    def _call_agent(self, name: str, context: TurnContext) -> list[Action]:
        started = self.timer()
        try:
            return self._run_agent(name, context)
        finally:
            self._agent_seconds += self.timer() - started

    def _run_agent(self, name: str, context: TurnContext) -> list[Action]:
        """The agent's actions; a transient failure is tried once more."""
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
            instance = self.committer.locked(session, instance_id, version)
            if instance is None:
                return self.committer.discarded(instance_id, context.reason, session)
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

    def _fail(
        self,
        instance_id: str,
        version: int,
        reason: TurnReason,
        why: str,
        *,
        within: tuple[Session, Mapping[str, InstanceFields]] | None = None,
    ) -> TurnOutcome:
        if within is not None:  # in the firing's transaction, on its locked row
            session, rows = within
            return self.committer.intervene(session, rows[instance_id], reason, why)
        with self.relay.store.transaction() as session:
            instance = self.committer.locked(session, instance_id, version)
            if instance is None:
                return self.committer.discarded(instance_id, reason, session)
            return self.committer.intervene(session, instance, reason, why)


def start_now(relay: Runtime, instance_id: str, owner: str = "cli") -> TurnOutcome | None:
    """Run one instance's due turn now and deliver what it wrote (``relay start``)."""
    from relay.engine.outbox.dispatcher import Dispatcher

    turns = TurnRunner(relay, owner)
    claimed = turns.claim(1, instance_id=instance_id)
    if not claimed:
        return None
    outcome = turns.run_claimed(*claimed[0])
    batch = relay.config.settings.daemon.batch
    Dispatcher(relay, Channels(relay), owner).deliver_due(batch, instance_id=instance_id)
    return outcome


# -- The answers checked before the commit ------------------------------------------------
#
# The checks that need the turn's context or the instance's JSON Schema (the kind
# checks themselves are pure: :mod:`relay.core.answers`). An answer relay refuses is
# never a reason to call a person: the agent is asked again in the same turn with the
# refusals in ``context.refused`` (up to :data:`ASK_AGAIN` times); if it still gets one
# wrong, the rest of its turn is applied, that todo is left as it was, and the refusal
# is kept in the instance's state (``relay:last_turn_notes``) so its next turn sees it.


#: How many times one turn's agent is asked again after a refused answer.
ASK_AGAIN = 2


def todo_specs(context: TurnContext) -> dict[int, AnswerSpec]:
    return {todo.id: todo.spec for todo in context.todos}


def context_todo(row: Any) -> ContextTodo:
    """A turn context's todo from a :func:`relay.store.queries.todo_rows_for` row."""
    spec = AnswerSpec.from_json(row.answer_kind, row.answer_spec, row.required)
    return ContextTodo(
        row.position, row.text, row.status, spec.kind.value, spec.choices, spec.required, row.answer
    )


def plan_for(actions: list[Action], context: TurnContext) -> TurnPlan:
    """:func:`validate_actions` plus the checks that need the context: the message an
    answer came from, and the instance's JSON Schema. Refusals become notes."""
    plan = validate_actions(actions, todo_specs(context))
    kept: list[RecordedAnswer] = []
    refused = list(plan.refused)
    for answer in plan.answers:
        error = _message_error(answer, context) or _schema_error(answer, context.result_schema)
        if error is None:
            kept.append(_with_message(answer, context))
        else:
            refused.append(
                Refusal("mark_todo_item", f"todo {answer.todo_id}: {error}", answer.todo_id)
            )
    dropped = {r.todo_id for r in refused if r not in plan.refused}
    updates = tuple(u for u in plan.todo_updates if u[0] not in dropped)
    notes = plan.notes + tuple(r.error for r in refused)
    return replace(
        plan, answers=tuple(kept), refused=tuple(refused), todo_updates=updates, notes=notes
    )


def until_accepted(call: Callable[[TurnContext], list[Action]], context: TurnContext) -> Decided:
    """Run the agent; while relay refuses one of its answers, ask it again with the
    refusals (as a tool error it can correct), at most :data:`ASK_AGAIN` times."""
    actions = call(context)
    for _ in range(ASK_AGAIN):
        decided = _checked(actions, context)
        if decided.plan is None or not decided.plan.refused:
            return decided
        actions = call(replace(context, refused=decided.plan.refused))
    return _checked(actions, context)


def _checked(actions: list[Action], context: TurnContext) -> Decided:
    try:
        return Decided(actions, plan_for(actions, context))
    except InvalidInput as exc:
        return Decided(actions, None, exc.message)  # not an answer problem: for a person


def _message_error(answer: RecordedAnswer, context: TurnContext) -> str | None:
    if answer.message_id is None:
        return None
    inbound = {
        m.id for m in (*context.transcript, *context.new_messages) if m.direction == "inbound"
    }
    if answer.message_id not in inbound:
        return (
            f"message_id {answer.message_id} is not a message from the contact in this conversation"
        )
    return None


def _with_message(answer: RecordedAnswer, context: TurnContext) -> RecordedAnswer:
    """An answer comes from the contact's latest message unless the agent said which."""
    if answer.message_id is not None:
        return answer
    for messages in (context.new_messages, context.transcript):
        inbound = [m.id for m in messages if m.direction == "inbound"]
        if inbound:
            return replace(answer, message_id=inbound[-1])
    return answer


def _schema_error(answer: RecordedAnswer, schema: Mapping[str, Any] | None) -> str | None:
    """Check one answer against its property in the result schema (jsonschema is
    imported only for instances that have one)."""
    if not schema:
        return None
    part = (schema.get("properties") or {}).get(str(answer.todo_id))
    if part is None:
        return None
    import jsonschema

    root = {**part, "$defs": schema.get("$defs", {})} if isinstance(part, dict) else part
    try:
        jsonschema.validate(answer.value, root)
    except jsonschema.ValidationError as exc:
        return f"answer {answer.value!r} does not match the result schema: {exc.message}"
    return None
