"""What a program that drives relay reads: results, the event log, and the checks
on what it hands in (todo answer kinds, ``meta``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from relay.core.answers import AnswerSpec, parse_spec, parse_todo
from relay.core.errors import InvalidInput
from relay.engine.views.events import EventView
from relay.engine.views.instances import MessageView, TodoView
from relay.engine.views.reports import ResultTodo, ResultView
from relay.store import contacts, queries
from relay.store import events as store_events
from relay.store import instances as store_instances
from relay.store import messages as store_messages
from relay.store.models import Instance

if TYPE_CHECKING:
    from relay.engine.runtime import Runtime

#: The largest ``meta`` object relay keeps (as JSON), so events stay small.
MAX_META = 4096


def todo_specs(todos: Sequence[str | Mapping[str, Any]]) -> list[tuple[str, AnswerSpec]]:
    """``"TEXT::KIND"`` strings or ``{"text": ..., "answer": KIND}`` objects."""
    found = []
    for item in todos:
        if isinstance(item, Mapping):
            text = item.get("text")
            if not isinstance(text, str):
                raise InvalidInput(f"todo {item!r} needs a text")
            answer = item.get("answer") or "text"
            found.append((text, parse_spec(str(answer))))
        else:
            found.append(parse_todo(str(item)))
    return found


def check_meta(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    if not meta:
        return {}
    if not all(isinstance(k, str) and k for k in meta):
        raise InvalidInput("meta keys must be non-empty text")
    if _depth(meta) > MAX_META_DEPTH:
        raise InvalidInput(f"meta nests more than {MAX_META_DEPTH} levels")
    try:
        size = len(json.dumps(dict(meta), allow_nan=False))
    except (TypeError, ValueError):
        raise InvalidInput(
            "meta must be JSON (text, numbers, true/false, lists, objects)"
        ) from None
    if size > MAX_META:
        raise InvalidInput(f"meta is larger than {MAX_META} bytes as JSON")
    return dict(meta)


#: How deep ``meta`` may nest: it comes back in every event, read by programs.
MAX_META_DEPTH = 32


def _depth(value: Any) -> int:
    """How many levels of objects and lists ``value`` nests (iteratively: a value
    nested past Python's recursion limit is measured too)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, Mapping) else item
        if isinstance(item, Mapping | list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in children)
    return deepest


def parse_meta(pairs: Sequence[str], flag: str = "--meta") -> dict[str, str]:
    """``["order=1042", "ticket=T-9"]`` (``relay start --meta``, ``--template-var``)
    -> a dict; ``flag`` names the option in the error."""
    meta = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidInput(f"{flag} {pair!r}: expected key=value")
        meta[key.strip()] = value
    return meta


def build_results(session: Session, instances: Sequence[Instance]) -> list[ResultView]:
    ids = [i.id for i in instances]
    todos = queries.todos_for(session, ids)
    message_ids = [t.answer_message_id for ts in todos.values() for t in ts if t.answer_message_id]
    messages = store_messages.by_ids(session, message_ids)
    contact_ids = {i.contact_id for i in instances}
    addresses = contacts.addresses_of(session, contact_ids)
    results = []
    for instance in instances:
        address = addresses.get(instance.contact_id, "")
        rows = []
        for todo in todos[instance.id]:
            message = messages.get(todo.answer_message_id or -1)
            view = MessageView.build(message, address) if message is not None else None
            rows.append(ResultTodo(TodoView.build(todo), view))
        answers = {str(t.todo.id): t.todo.answer for t in rows if t.todo.answered}
        results.append(
            ResultView(
                id=instance.id,
                contact=address,
                state=instance.state,
                todos=tuple(rows),
                meta=dict(instance.meta or {}),
                ended_at=instance.ended_at,
                schema_errors=tuple(_result_errors(instance, answers)),
            )
        )
    return results


def _result_errors(instance: Instance, answers: dict[str, Any]) -> list[str]:
    """The whole result against its schema, once the conversation has ended (before
    that a missing answer is only not given yet)."""
    if not instance.result_schema or instance.ended_at is None:
        return []
    return schema_errors(instance.result_schema, answers)


def parse_cursor(since: int | str | None) -> int:
    if since is None or since == "":
        return 0
    text = str(since).strip()
    if not text.isdigit():
        raise InvalidInput(f"invalid cursor {since!r}: a cursor is the number an event gave")
    return int(text)


def read_events(
    relay: Runtime,
    *,
    since: int | str | None = None,
    instance_ids: Sequence[str] | None = None,
    kinds: Sequence[str] | None = None,
    limit: int = 1000,
) -> list[EventView]:
    """Events after cursor ``since`` (None: from the start), oldest first."""
    after = parse_cursor(since)
    with relay.store.read_transaction() as session:
        ids = None
        if instance_ids is not None:
            ids = [store_instances.resolve(session, i).id for i in instance_ids]
        rows = store_events.read(
            session,
            after=after,
            instance_ids=ids,
            kinds=list(kinds) if kinds else None,
            limit=limit,
        )
        return [
            EventView(
                row.id,
                row.kind,
                row.instance_id,
                row.actor,
                store_events.data_of(row),
                dict(meta or {}),
                row.created_at,
            )
            for row, meta in rows
        ]


def last_cursor(relay: Runtime) -> int:
    with relay.store.read_transaction() as session:
        return store_events.last_id(session)


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
