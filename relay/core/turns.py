"""What an agent turn sees (:class:`TurnContext`) and what it may answer (actions).

Agents of every backend speak this vocabulary. Actions are validated as a
whole before any is applied (:func:`validate_actions`), so a turn with one bad
action changes nothing but the instance's state (to NEEDS_HUMAN_INTERVENTION).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any

from relay.core.answers import TEXT, AnswerSpec, check_answer, spec_of
from relay.core.durations import parse_duration
from relay.core.errors import InvalidInput

# Where an agent has always found them; they live with the state table now.
from relay.core.states import TURN_REASONS as TURN_REASONS
from relay.core.states import TURN_STATES as TURN_STATES
from relay.core.states import TurnReason as TurnReason
from relay.core.values import TodoStatus

#: The longest ``set_state`` key (with its scope prefix) the store holds.
MAX_STATE_KEY = 255


@dataclass(frozen=True)
class ContextMessage:
    id: int
    direction: str
    author: str
    text: str
    at: str


@dataclass(frozen=True)
class ContextTodo:
    id: int
    text: str
    status: str
    #: The answer wanted (see :mod:`relay.core.answers`): kind, choices, required.
    answer_kind: str = "text"
    choices: tuple[str, ...] = ()
    required: bool = True
    #: The answer recorded so far (None: none yet).
    answer: Any = None

    @property
    def spec(self) -> AnswerSpec:
        return spec_of(self.answer_kind, self.choices, self.required)


@dataclass(frozen=True)
class Refusal:
    """An action relay refused in this turn's previous attempt, with why: the agent
    is asked again with these, and can correct them (an answer of the wrong kind)."""

    action: str
    error: str
    todo_id: int | None = None


@dataclass(frozen=True)
class TurnContext:
    instance_id: str
    reason: TurnReason
    objective: str
    contact: str
    todos: tuple[ContextTodo, ...]
    transcript: tuple[ContextMessage, ...]
    new_messages: tuple[ContextMessage, ...]
    state: dict[str, Any] = field(default_factory=dict)
    follow_up_number: int = 0
    max_followups: int = 0
    now: str = ""
    #: What relay refused in this turn's previous attempt (empty on the first).
    refused: tuple[Refusal, ...] = ()
    #: A JSON Schema for the whole result, keyed by todo id (``relay start --schema``).
    result_schema: dict[str, Any] | None = None
    #: What is known of the contact (an import's columns: name, order, ...).
    contact_fields: dict[str, Any] = field(default_factory=dict)
    campaign: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["reason"] = self.reason.value
        return data


@dataclass(frozen=True)
class Action:
    """One thing an agent asks for; ``args`` holds the validated arguments."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def send_message(text: str) -> Action:
        return Action("send_message", {"text": text})

    @staticmethod
    def mark_todo_item(
        todo_id: int, status: str, answer: Any = None, message_id: int | None = None
    ) -> Action:
        args: dict[str, Any] = {"todo_id": todo_id, "status": status}
        if answer is not None:
            args["answer"] = answer
        if message_id is not None:
            args["message_id"] = message_id
        return Action("mark_todo_item", args)

    @staticmethod
    def end_conversation(reason: str = "completed") -> Action:
        return Action("end_conversation", {"reason": reason})

    @staticmethod
    def request_human_intervention(reason: str) -> Action:
        return Action("request_human_intervention", {"reason": reason})

    @staticmethod
    def schedule_next_heartbeat(delay: str) -> Action:
        return Action("schedule_next_heartbeat", {"delay": delay})

    @staticmethod
    def set_state(key: str, value: Any) -> Action:
        return Action("set_state", {"key": key, "value": value})

    @staticmethod
    def opt_out(reason: str) -> Action:
        return Action("opt_out", {"reason": reason})


@dataclass(frozen=True)
class RecordedAnswer:
    """An answer a turn records for a todo, normalised to its kind."""

    todo_id: int
    value: Any
    message_id: int | None = None


@dataclass(frozen=True)
class TurnPlan:
    """The validated, normalised outcome of a turn, ready to apply in one transaction."""

    messages: tuple[str, ...] = ()
    todo_updates: tuple[tuple[int, TodoStatus], ...] = ()
    end_reason: str | None = None
    intervention_reason: str | None = None
    next_heartbeat: timedelta | None = None
    state_updates: tuple[tuple[str, Any], ...] = ()
    notes: tuple[str, ...] = ()
    #: The contact asked to hear nothing more (in words a keyword rule missed).
    opt_out_reason: str | None = None
    answers: tuple[RecordedAnswer, ...] = ()
    #: Todo updates refused (an answer of the wrong kind): not applied.
    refused: tuple[Refusal, ...] = ()

    @property
    def ends_conversation(self) -> bool:
        return self.end_reason is not None and self.intervention_reason is None

    def stale_given(self, unseen_replies: int) -> bool:
        """Whether this plan must be thrown away because the contact wrote while the
        agent was deciding: ending the conversation on a message the agent never
        saw would leave that message unanswered for good. Any other outcome keeps
        the conversation live, and the new message is answered next."""
        return unseen_replies > 0 and self.ends_conversation


def actions_from_json(data: Any) -> list[Action]:
    """Read the ``{"actions": [{"name": ..., "args": {...}}]}`` wire form."""
    if isinstance(data, dict):
        data = data.get("actions")
    if not isinstance(data, list):
        raise InvalidInput('agent output must be {"actions": [...]}')
    actions = []
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise InvalidInput(f"invalid action {item!r}: expected an object with a name")
        args = item.get("args", {k: v for k, v in item.items() if k != "name"})
        if not isinstance(args, dict):
            raise InvalidInput(f"invalid action {item['name']}: args must be an object")
        actions.append(Action(item["name"], dict(args)))
    return actions


def _text(args: dict[str, Any], key: str, action: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{action}: {key} must be non-empty text")
    return _no_nul(value.strip(), key, action)


def _no_nul(value: str, key: str, action: str) -> str:
    """PostgreSQL text cannot hold NUL: refuse it here rather than fail the commit."""
    if "\x00" in value:
        raise InvalidInput(f"{action}: {key} contains a NUL character")
    return value


@dataclass
class _Draft:
    """A TurnPlan being assembled, one validated action at a time."""

    messages: list[str] = field(default_factory=list)
    todos: list[tuple[int, TodoStatus]] = field(default_factory=list)
    answers: list[RecordedAnswer] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    states: list[tuple[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    end: str | None = None
    intervention: str | None = None
    delay: timedelta | None = None
    opt_out: str | None = None


def _send_message(draft: _Draft, args: dict[str, Any], todo_ids: TodoSpecs) -> None:
    draft.messages.append(_text(args, "text", "send_message"))


def _mark_todo(draft: _Draft, args: dict[str, Any], todo_ids: TodoSpecs) -> None:
    todo_id, status = _todo_update(args, todo_ids)
    if args.get("answer") is None:
        draft.todos.append((todo_id, status))
        return
    spec = todo_ids.get(todo_id, TEXT) if isinstance(todo_ids, Mapping) else TEXT
    try:
        value = check_answer(spec, args["answer"])
        message_id = _message_id(args.get("message_id"))
    except InvalidInput as exc:
        # Refused back to the agent, which can correct it: not a reason for a person.
        error = f"todo {todo_id}: {exc.message}; the todo was not updated"
        draft.refused.append(Refusal("mark_todo_item", error, todo_id))
        return
    draft.todos.append((todo_id, status))
    draft.answers.append(RecordedAnswer(todo_id, value, message_id))


def _message_id(raw: Any) -> int | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int | str) or not str(raw).isdigit():
        raise InvalidInput(f"message_id {raw!r} is not a message id")
    return int(raw)


def _end(draft: _Draft, args: dict[str, Any], todo_ids: TodoSpecs) -> None:
    end = str(args.get("reason") or "completed").strip() or "completed"
    draft.end = _no_nul(end, "reason", "end_conversation")


def _intervene(draft: _Draft, args: dict[str, Any], todo_ids: TodoSpecs) -> None:
    draft.intervention = _text(args, "reason", "request_human_intervention")


def _schedule(draft: _Draft, args: dict[str, Any], todo_ids: TodoSpecs) -> None:
    raw = args.get("delay")
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        raw = f"{int(raw)}s"
    if not isinstance(raw, str):
        raise InvalidInput("schedule_next_heartbeat: delay must be a duration like 2h")
    draft.delay = parse_duration(raw)


def _set_state(draft: _Draft, args: dict[str, Any], todo_ids: TodoSpecs) -> None:
    draft.states.append(_state_update(args))


def _opt_out(draft: _Draft, args: dict[str, Any], todo_ids: TodoSpecs) -> None:
    draft.opt_out = _text(args, "reason", "opt_out")


def _place_call(draft: _Draft, args: dict[str, Any], todo_ids: TodoSpecs) -> None:
    draft.notes.append("place_call is not available yet; no call was placed")


_HANDLERS = {
    "send_message": _send_message,
    "mark_todo_item": _mark_todo,
    "end_conversation": _end,
    "request_human_intervention": _intervene,
    "schedule_next_heartbeat": _schedule,
    "set_state": _set_state,
    "place_call": _place_call,
    "opt_out": _opt_out,
}

#: Every action an agent may answer with, in the order agents are told about them.
ACTION_NAMES: tuple[str, ...] = tuple(_HANDLERS)


#: The turn's todos: their ids, or (to check answers) each id's :class:`AnswerSpec`.
TodoSpecs = Collection[int] | Mapping[int, AnswerSpec]


def validate_actions(actions: list[Action], todo_ids: TodoSpecs) -> TurnPlan:
    """Check every action and fold them into a :class:`TurnPlan`, or raise InvalidInput.

    An answer of the wrong kind does not fail the turn: that todo update is left
    out and listed in ``TurnPlan.refused``, for the agent to correct."""
    draft = _Draft()
    for action in actions:
        handler = _HANDLERS.get(action.name)
        if handler is None:
            raise InvalidInput(f"unknown action {action.name!r} (known: {', '.join(ACTION_NAMES)})")
        handler(draft, action.args, todo_ids)
    if draft.end is not None and draft.intervention is not None:
        raise InvalidInput("a turn cannot both end the conversation and request intervention")
    if draft.opt_out is not None and (draft.messages or draft.end or draft.intervention):
        # Nothing may reach a contact who opted out, and the opt-out ends the conversation.
        raise InvalidInput(
            "opt_out ends the conversation and sends nothing: it cannot be combined with "
            "send_message, end_conversation or request_human_intervention"
        )
    return TurnPlan(
        messages=tuple(draft.messages),
        todo_updates=tuple(draft.todos),
        end_reason=draft.end,
        intervention_reason=draft.intervention,
        next_heartbeat=draft.delay,
        state_updates=tuple(draft.states),
        notes=tuple(draft.notes),
        opt_out_reason=draft.opt_out,
        answers=tuple(draft.answers),
        refused=tuple(draft.refused),
    )


def _state_update(args: dict[str, Any]) -> tuple[str, Any]:
    """A key the store can hold (its column is 255 characters on every backend) and a
    value it can write (JSON): found here, not as a database error mid-commit."""
    key = _text(args, "key", "set_state")
    if len(key) > MAX_STATE_KEY:
        raise InvalidInput(f"set_state: key is longer than {MAX_STATE_KEY} characters")
    value = args.get("value")
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        raise InvalidInput(
            f"set_state: value must be JSON (text, number, true/false, null, list or object), "
            f"not {type(value).__name__}"
        ) from None
    return key, value


def _todo_update(args: dict[str, Any], todo_ids: TodoSpecs) -> tuple[int, TodoStatus]:
    raw_id = args.get("todo_id")
    try:
        todo_id = int(raw_id)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InvalidInput(f"mark_todo_item: todo_id {raw_id!r} is not a number") from None
    if todo_id not in todo_ids:
        raise InvalidInput(f"mark_todo_item: unknown todo id {raw_id!r}")
    try:
        status = TodoStatus(str(args.get("status")))
    except ValueError:
        allowed = ", ".join(s.value for s in TodoStatus)
        raise InvalidInput(
            f"mark_todo_item: invalid status {args.get('status')!r} (allowed: {allowed})"
        ) from None
    return todo_id, status
