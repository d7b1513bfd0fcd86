"""An agent backed by any server that speaks OpenAI's chat-completions API with tools.

OpenAI itself, Azure-style gateways, vLLM, llama.cpp, Ollama and LiteLLM all
accept the same request, so one backend covers them: each relay action is
offered as a function tool and the model's tool calls come back as actions.

This module imports httpx; the registry (:data:`relay.agents.base.BUILTIN_AGENTS`)
imports it only when an ``openai`` agent is built, so other commands stay fast.
"""

from __future__ import annotations

import functools
import json
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from relay.agents.base import (
    AgentConfigError,
    AgentError,
    TransientAgentError,
    excerpt,
    timeout_seconds,
)
from relay.core.turns import Action, ContextMessage, ContextTodo, TurnContext, TurnReason
from relay.core.values import TodoStatus


def _tool(name: str, description: str, properties: dict[str, Any], *required: str) -> dict:
    parameters = {"type": "object", "properties": properties, "required": list(required)}
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


_TEXT = {"type": "string"}

#: One function tool per action, in :data:`relay.core.turns.ACTION_NAMES` order.
TOOLS: tuple[dict[str, Any], ...] = (
    _tool(
        "send_message",
        "Send the contact a message. Keep it short and in the contact's language.",
        {"text": {**_TEXT, "description": "The message text."}},
        "text",
    ),
    _tool(
        "mark_todo_item",
        "Change a checklist item's status: in_progress when you ask about it, "
        "completed when the contact's answer settles it, skipped if it no longer applies. "
        "With completed, record the answer in the form the checklist item wants; relay "
        "refuses an answer of the wrong form and tells you why.",
        {
            "todo_id": {"type": "integer", "description": "The id from the checklist."},
            "status": {"type": "string", "enum": [s.value for s in TodoStatus]},
            "answer": {
                "description": "The contact's answer, in the form the item wants: text, one "
                "of its choices, YYYY-MM-DD, HH:MM, a number, true/false, an email, a phone."
            },
            "message_id": {
                "type": "integer",
                "description": "The id of the contact's message the answer came from "
                "(default: their latest).",
            },
        },
        "todo_id",
        "status",
    ),
    _tool(
        "end_conversation",
        "End the conversation, after the last message, when the objective is met or cannot be met.",
        {"reason": {**_TEXT, "description": "Why it ends; default 'completed'."}},
    ),
    _tool(
        "request_human_intervention",
        "Hand the conversation to a person: the contact asks for one, is upset, "
        "or you cannot proceed. No other action should follow.",
        {"reason": {**_TEXT, "description": "One line for the operator."}},
        "reason",
    ),
    _tool(
        "schedule_next_heartbeat",
        "Wait this long for a reply before following up, when the contact "
        "asked for time (e.g. 'call me tomorrow').",
        {"delay": {**_TEXT, "description": "A duration such as 90s, 30m, 2h, 1d."}},
        "delay",
    ),
    _tool(
        "set_state",
        "Remember a value. Keys are per conversation; prefix contact: to share with "
        "later conversations with this contact, app: to share with all, temp: for this turn.",
        {
            "key": {**_TEXT, "description": "The key, e.g. preferred_time."},
            "value": {"description": "Any JSON value."},
        },
        "key",
        "value",
    ),
    _tool(
        "place_call",
        "Ask for a phone call with the contact (not available yet: only noted).",
        {"reason": {**_TEXT, "description": "What the call is for."}},
    ),
    _tool(
        "opt_out",
        "The contact asked not to be contacted any more (in any words, e.g. 'leave me "
        "alone'). Records the opt-out: the conversation ends and nothing more is sent, "
        "so no other action may accompany it.",
        {"reason": {**_TEXT, "description": "One line for the operator, e.g. what they said."}},
        "reason",
    ),
)

_TURNS = {
    TurnReason.FIRST_MESSAGE: "Write the opening message: introduce the objective and ask "
    "about the first open checklist item (mark it in_progress).",
    TurnReason.REPLY: "The contact replied (messages marked [new]). Record what the reply "
    "settles, then answer or ask about the next open item.",
    TurnReason.FOLLOW_UP: "The contact has not replied. Send follow-up {n} of {max}: one "
    "short, polite nudge about the open question.",
    TurnReason.RESUME: "An operator resumed the conversation. Read the transcript (messages "
    "marked [new] arrived meanwhile) and carry on.",
}

_RULES = """\
Rules:
- Act only through the tools; text outside a tool call is sent to the contact as a message.
- Ask about one checklist item at a time; never invent answers or facts.
- When every item is completed or skipped, thank the contact and call end_conversation.
- If the contact asks for a person, is upset, or you are unsure, call request_human_intervention.
- Messages marked [new] arrived since the last turn; [operator] messages were sent by a person \
on your side."""


def system_prompt(context: TurnContext) -> str:
    """Everything but the transcript: who we are, what we want, what is left, what now."""
    todos = "\n".join(_todo_line(t) for t in context.todos) or "(none)"
    turn = _TURNS[TurnReason(context.reason)].format(
        n=context.follow_up_number, max=context.max_followups
    )
    lines = [
        "You conduct a text conversation with one contact on behalf of an operator.",
        f"Objective: {context.objective}",
        f"Contact: {context.contact}",
        *(
            [f"About the contact: {json.dumps(context.contact_fields, sort_keys=True)}"]
            if context.contact_fields
            else []
        ),
        f"Checklist:\n{todos}",
        f"Saved state: {json.dumps(context.state, default=str, sort_keys=True)}",
        f"Now: {context.now or 'unknown'}",
        f"This turn: {turn}",
        _RULES,
    ]
    if context.result_schema:
        lines.append(
            f"Answers must fit this JSON Schema (keyed by item id): "
            f"{json.dumps(context.result_schema, sort_keys=True)}"
        )
    if context.refused:
        refused = "\n".join(f"- {r.action}: {r.error}" for r in context.refused)
        lines.append(
            "relay refused these tool calls from your previous attempt at this turn; "
            f"correct them (ask the contact again if the answer is unclear):\n{refused}"
        )
    return "\n".join(lines)


def _todo_line(todo: ContextTodo) -> str:
    wants = todo.spec.describe() + ("" if todo.required else ", optional")
    answer = f"; answer so far: {json.dumps(todo.answer)}" if todo.answer is not None else ""
    return f"- id {todo.id} [{todo.status}] {todo.text} (answer: {wants}{answer})"


def chat_messages(context: TurnContext) -> list[dict[str, str]]:
    """The system prompt, then the transcript: the contact is the user, we are the assistant."""
    new_ids = {m.id for m in context.new_messages}
    seen = {m.id for m in context.transcript}
    history = [*context.transcript, *(m for m in context.new_messages if m.id not in seen)]
    messages = [{"role": "system", "content": system_prompt(context)}]
    messages += [_chat_message(m, m.id in new_ids) for m in history]
    return messages


def _chat_message(message: ContextMessage, new: bool) -> dict[str, str]:
    role = "user" if message.direction == "inbound" else "assistant"
    tags = "[new] " if new else ""
    if message.author not in ("contact", "agent"):
        tags += f"[{message.author}] "
    return {"role": role, "content": tags + message.text}


@dataclass(frozen=True)
class OpenAIAgent:
    base_url: str
    model: str
    api_key_env: str | None = None
    temperature: float | None = None
    timeout: float = 60.0
    #: Tests hand in an ``httpx.MockTransport``; ``None`` means the network.
    transport: httpx.BaseTransport | None = None
    name: str = "openai"

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> OpenAIAgent:
        """Check the settings now, but read the key at each turn, so a key that
        is set or rotated after the daemon starts is picked up."""
        base_url, model = (_required(settings, key) for key in ("base_url", "model"))
        key_env = settings.get("api_key_env")
        if key_env is not None and (not isinstance(key_env, str) or not key_env.strip()):
            raise AgentConfigError("agent.openai.api_key_env must name an environment variable")
        return cls(
            base_url=base_url.rstrip("/"),
            model=model,
            api_key_env=key_env.strip() if key_env else None,
            temperature=_temperature(settings.get("temperature")),
            timeout=timeout_seconds(settings),
        )

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def run(self, context: TurnContext) -> list[Action]:
        key = self.api_key()
        data = self.post(self.request_body(context), key)
        return parse_response(data)

    def check(self) -> list[str]:
        """What ``relay start`` and ``relay doctor`` report before any turn runs."""
        try:
            self.api_key()
        except AgentConfigError as exc:
            return [exc.message]
        return []

    def api_key(self) -> str | None:
        if self.api_key_env is None:
            return None  # a local server that takes no key
        key = os.environ.get(self.api_key_env, "").strip()
        if not key:
            raise AgentConfigError(
                f"openai agent: the environment variable {self.api_key_env} "
                "(agent.openai.api_key_env) is not set"
            )
        return key

    def request_body(self, context: TurnContext) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": chat_messages(context),
            "tools": list(TOOLS),
            "tool_choice": "auto",
        }
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return body

    def post(self, body: dict[str, Any], key: str | None) -> Any:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        options: dict[str, Any] = {"timeout": self.timeout, "verify": tls()}
        try:
            with httpx.Client(transport=self.transport, **options) as client:
                response = client.post(self.url, json=body, headers=headers)
        except httpx.TimeoutException:
            raise TransientAgentError(
                f"openai agent: {self.url} did not answer within {self.timeout:g}s"
            ) from None
        except httpx.HTTPError as exc:
            raise TransientAgentError(
                f"openai agent: cannot reach {self.url}: {excerpt(str(exc) or type(exc).__name__)}"
            ) from None
        check_status(response, key)
        try:
            return response.json()
        except ValueError:
            raise AgentError(
                f"openai agent: the server answered with malformed JSON: {_detail(response, key)!r}"
            ) from None


@functools.cache
def tls() -> ssl.SSLContext:
    """The certificates, loaded once a process: loading them is most of a request's
    cost to a nearby server (about 50 ms), paid by every turn and every label."""
    return httpx.create_ssl_context()


def check_status(response: httpx.Response, key: str | None) -> None:
    """Map HTTP failures to what the engine should do: retry once, or ask a person."""
    status = response.status_code
    if 200 <= status < 300:
        return
    detail = _detail(response, key)
    if status in (401, 403):
        raise AgentError(f"openai agent: authentication failed (HTTP {status}): {detail}")
    if status == 429:
        raise AgentError(f"openai agent: rate limited (HTTP 429): {detail}")
    if status >= 500:
        raise TransientAgentError(f"openai agent: server error (HTTP {status}): {detail}")
    raise AgentError(f"openai agent: request refused (HTTP {status}): {detail}")


def parse_response(data: Any) -> list[Action]:
    """Tool calls become actions; a bare text answer is taken as a message to send."""
    try:
        message = data["choices"][0]["message"]
        calls = message.get("tool_calls") or []
    except (KeyError, IndexError, TypeError, AttributeError):
        raise AgentError(
            f"openai agent: the response has no choices[0].message: {excerpt(json.dumps(data))}"
        ) from None
    if calls:
        return [_tool_action(call) for call in calls]
    content = message.get("content")
    if isinstance(content, str) and content.strip():
        return [Action.send_message(content.strip())]
    raise AgentError("openai agent: the model answered with neither tool calls nor text")


def _tool_action(call: Any) -> Action:
    function = call.get("function") if isinstance(call, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str) or not name:
        raise AgentError(f"openai agent: malformed tool call {excerpt(json.dumps(call))}")
    raw = function.get("arguments") or "{}"  # type: ignore[union-attr]
    try:
        args = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError as exc:
        raise AgentError(
            f"openai agent: tool call {name} has invalid JSON arguments ({exc.msg}): "
            f"{excerpt(raw, 80)!r}"
        ) from None
    if not isinstance(args, dict):
        raise AgentError(f"openai agent: tool call {name} arguments must be a JSON object")
    return Action(name, args)


def _detail(response: httpx.Response, key: str | None) -> str:
    """The server's own error message if it sent one, never echoing the key back."""
    text = response.text
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        error = None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        text = error["message"]
    elif isinstance(error, str):
        text = error
    if key:
        text = text.replace(key, "***")
    return excerpt(text) or "(empty body)"


def _required(settings: Mapping[str, Any], key: str) -> str:
    value = settings.get(key)
    if not isinstance(value, str) or not value.strip():
        raise AgentConfigError(f"agent.openai.{key} is not set: add it to [agent.openai]")
    return value.strip()


def _temperature(raw: Any) -> float | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not 0 <= raw <= 2:
        raise AgentConfigError(f"agent.openai.temperature must be a number 0-2, not {raw!r}")
    return float(raw)
