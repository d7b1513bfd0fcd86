"""The default agent: a fixed script, offline and deterministic.

It lets relay run end to end with no model and no network (the quickstart,
the demo, the engine's own tests): greet with the objective, ask about each
open todo in order, take the contact's next reply as the answer, thank and end
when nothing is left. The same context always gives the same actions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, ClassVar

from relay.agents.base import AgentConfigError, AgentError, excerpt
from relay.core.answers import AnswerKind, extract_answer
from relay.core.turns import Action, ContextMessage, ContextTodo, TurnContext, TurnReason

DEFAULT_TEMPLATES: dict[str, str] = {
    "greeting": "Hello! I'm getting in touch about {objective}.",
    "question": "Could you help me with this: {todo}",
    "followup": "Just following up (reminder {n} of {max}). {question}",
    "thanks": "Thank you, that's everything I needed. Have a good day!",
    "retry": "Sorry, I need {hint} for this. {question}",
}

#: The named fields every template may use.
FIELDS = ("objective", "contact", "todo", "question", "n", "max", "hint")

#: A reply containing one of these words (case-insensitive, whole words) is
#: taken as a request to talk to a person. Deliberately simple: a false
#: positive costs an operator a look, a false negative costs a contact more.
HUMAN_WORDS = ("human", "person", "agent", "operator")
_HUMAN = re.compile(r"\b(?:" + "|".join(HUMAN_WORDS) + r")s?\b", re.IGNORECASE)

_SAMPLE = dict.fromkeys(FIELDS, "x")


@dataclass(frozen=True)
class ScriptedAgent:
    templates: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_TEMPLATES))
    name: str = "scripted"
    #: It answers from its templates, with no I/O: a follow-up's turn may run in
    #: the transaction that fires it (relay.engine.conversation.heartbeat.AtOnce).
    at_once: ClassVar[bool] = True

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> ScriptedAgent:
        """Overlay the template keys from settings, and try each once so a typo in
        relay.toml fails when the agent is built rather than mid-conversation."""
        templates = dict(DEFAULT_TEMPLATES)
        for key in DEFAULT_TEMPLATES:
            value = settings.get(key)
            if value is None:
                continue
            if not isinstance(value, str) or not value.strip():
                raise AgentConfigError(f"scripted agent: template {key!r} must be non-empty text")
            templates[key] = value
        agent = cls(templates)
        for key in templates:
            try:
                agent.render(key, _SAMPLE)
            except AgentError as exc:
                raise AgentConfigError(exc.message) from None
        return agent

    def run(self, context: TurnContext) -> list[Action]:
        reason = TurnReason(context.reason)
        if reason is TurnReason.FIRST_MESSAGE:
            return self._first_message(context)
        replies = contact_text(context.new_messages)
        if reason is TurnReason.FOLLOW_UP and not replies:
            return self._follow_up(context)
        if replies:
            # Also in a follow-up turn: the contact answered after the heartbeat fired.
            return self._reply(context, replies)
        # A resume (or a reply turn with nothing from the contact): pick up where we were.
        todo = current_todo(context.todos)
        return self._ask(context, todo) if todo else self._finish(context)

    def render(self, key: str, fields: Mapping[str, Any]) -> str:
        template = self.templates[key]
        try:
            text = template.format(**fields).strip()
        except KeyError as exc:
            known = ", ".join("{" + name + "}" for name in FIELDS)
            raise AgentError(
                f"scripted agent: template {key!r} uses unknown field {{{exc.args[0]}}} "
                f"(known: {known})"
            ) from None
        except (IndexError, ValueError, AttributeError) as exc:
            raise AgentError(
                f"scripted agent: template {key!r} is not a valid format string: {exc}"
            ) from None
        if not text:
            raise AgentError(f"scripted agent: template {key!r} rendered as empty text")
        return text

    def _first_message(self, context: TurnContext) -> list[Action]:
        greeting = self.render("greeting", _fields(context))
        todo = current_todo(context.todos)
        if todo is None:
            return [Action.send_message(greeting)]
        question = self._question(context, todo)
        return [*_start(todo), Action.send_message(f"{greeting} {question}")]

    def _follow_up(self, context: TurnContext) -> list[Action]:
        todo = current_todo(context.todos)
        question = (
            self._question(context, todo) if todo else self.render("greeting", _fields(context))
        )
        text = self.render("followup", _fields(context, todo, question=question))
        return [*_start(todo), Action.send_message(text)]

    def _reply(self, context: TurnContext, text: str) -> list[Action]:
        if _HUMAN.search(text):
            reason = f"the contact asked for a person: {excerpt(text, 160)}"
            return [Action.request_human_intervention(reason)]
        answered = current_todo(context.todos)
        actions: list[Action] = []
        if answered is not None:
            if any(r.todo_id == answered.id for r in context.refused):
                # relay refused the answer read from this reply: ask once more.
                return [Action.send_message(self._retry(context, answered))]
            value = extract_answer(answered.spec, text, _today(context))
            actions += [
                Action.mark_todo_item(answered.id, "completed", answer=value),
                Action.set_state(f"answer:{answered.id}", text),
            ]
        following = current_todo(context.todos, skip=answered.id if answered else None)
        if following is None:
            return actions + self._finish(context)
        return actions + self._ask(context, following)

    def _retry(self, context: TurnContext, todo: ContextTodo) -> str:
        question = self._question(context, todo)
        hint = todo.spec.describe()
        if todo.spec.kind is AnswerKind.YESNO:
            hint = "a yes or a no"
        return self.render("retry", _fields(context, todo, question=question, hint=hint))

    def _ask(self, context: TurnContext, todo: ContextTodo) -> list[Action]:
        return [*_start(todo), Action.send_message(self._question(context, todo))]

    def _question(self, context: TurnContext, todo: ContextTodo) -> str:
        """A todo already phrased as a question ("Is 12 Harbour Street right?") reads
        badly after the default preamble, so it is asked as written."""
        if self.templates["question"] == DEFAULT_TEMPLATES["question"] and _is_question(todo):
            return todo.text.strip()
        return self.render("question", _fields(context, todo))

    def _finish(self, context: TurnContext) -> list[Action]:
        thanks = self.render("thanks", _fields(context))
        return [Action.send_message(thanks), Action.end_conversation("completed")]


def current_todo(todos: tuple[ContextTodo, ...], skip: int | None = None) -> ContextTodo | None:
    """The todo under discussion: the first in progress, else the first pending."""
    for status in ("in_progress", "pending"):
        for todo in todos:
            if todo.status == status and todo.id != skip:
                return todo
    return None


def contact_text(messages: tuple[ContextMessage, ...]) -> str:
    """What the contact said since the last turn, as one answer."""
    texts = [m.text.strip() for m in messages if m.direction == "inbound" and m.text.strip()]
    return "\n".join(texts)


def _is_question(todo: ContextTodo) -> bool:
    return todo.text.strip().endswith("?")


def _start(todo: ContextTodo | None) -> list[Action]:
    if todo is None or todo.status != "pending":
        return []
    return [Action.mark_todo_item(todo.id, "in_progress")]


def _today(context: TurnContext) -> date | None:
    try:
        return datetime.fromisoformat(context.now.replace("Z", "+00:00")).date()
    except ValueError:
        return None


def _fields(
    context: TurnContext, todo: ContextTodo | None = None, question: str = "", hint: str = ""
) -> dict[str, Any]:
    return {
        "hint": hint,
        "objective": context.objective,
        "contact": context.contact,
        "todo": todo.text if todo else "",
        "question": question,
        "n": context.follow_up_number,
        "max": context.max_followups,
    }
