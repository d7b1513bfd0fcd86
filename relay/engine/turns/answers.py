"""What an agent keeps besides its messages: structured answers to the todos, and
scoped key-value state.

Answers: the checks that need the turn's context or the
instance's JSON Schema, refusing a wrong answer back to the agent, and recording
accepted answers with their events. The kind checks themselves are pure
(:mod:`relay.core.answers`). An answer relay
refuses is never a reason to call a person: the agent is asked again in the same
turn with the refusals in ``context.refused`` (up to :data:`ASK_AGAIN` times);
if it still gets one wrong, the rest of its turn is applied, that todo is left
as it was, and the refusal is kept in the instance's state
(``relay:last_turn_notes``) so its next turn sees it.

Scoped state (:func:`load_state`, :func:`store_state`): ``app:`` keys shared by
every conversation, ``contact:`` keys by every conversation with one contact,
bare keys owned by one instance, and ``temp:`` keys that live for one turn and
are never stored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import Row
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from relay.core.answers import AnswerSpec
from relay.core.errors import InvalidInput
from relay.core.turns import (
    Action,
    ContextTodo,
    RecordedAnswer,
    Refusal,
    TurnContext,
    TurnPlan,
    validate_actions,
)
from relay.core.values import EventKind, Scope, split_scoped_key
from relay.engine.conversation import transitions
from relay.store import state_entries
from relay.store.locked_rows import InstanceFields
from relay.store.models import StateEntry, Todo

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


@dataclass(frozen=True)
class Decided:
    """What an agent decided in a turn, and its plan (checked once, here, and
    applied by the commit as it is)."""

    actions: list[Action]
    #: None when the actions are invalid beyond an answer to correct (``error``
    #: says why): the commit hands the conversation to a person.
    plan: TurnPlan | None
    error: str | None = None


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


def schema_errors(schema: Mapping[str, Any] | None, result: Mapping[str, Any]) -> list[str]:
    """Every way a whole result (answers keyed by todo id) misses its schema."""
    if not schema:
        return []
    import jsonschema

    validator = jsonschema.validators.validator_for(schema)(schema)
    return [
        f"{'/'.join(str(p) for p in error.absolute_path) or '(result)'}: {error.message}"
        for error in sorted(validator.iter_errors(dict(result)), key=lambda e: list(e.path))
    ]


def check_schema(schema: Any) -> dict[str, Any]:
    """A result schema given to ``relay start --schema``: a valid JSON Schema object."""
    if not isinstance(schema, dict):
        raise InvalidInput("the result schema must be a JSON object")
    import jsonschema

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise InvalidInput(f"the result schema is not a valid JSON Schema: {exc.message}") from None
    return schema


def apply(
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


# -- scoped state ------------------------------------------------------------------------


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
    contacts = {scope_id_of(i, Scope.CONTACT) for i in instances}
    owns = {scope_id_of(i, Scope.INSTANCE) for i in instances}
    entries = state_entries.entries_for(session, contacts, owns)
    scoped: dict[tuple[str, str], dict[str, Any]] = {}
    for entry in entries:
        scoped.setdefault((entry.scope, entry.scope_id), {})[entry.key] = entry.value
    states = {}
    for instance in instances:
        state: dict[str, Any] = {}
        for scope in (Scope.APP, Scope.CONTACT, Scope.INSTANCE):
            state.update(scoped.get((scope.value, scope_id_of(instance, scope)), {}))
        states[instance.id] = state
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
