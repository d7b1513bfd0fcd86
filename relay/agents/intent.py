"""The intent classifier's call: one chat completion per reply, to the server of
``[agent.openai]`` (its ``base_url`` and ``api_key_env``), through the same
client as the ``openai`` agent, so both map the server's failures alike.

Imported only when ``[intent] enabled`` (it imports httpx).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from relay.agents.base import AgentError
from relay.agents.openai_compat import OpenAIAgent
from relay.core.intents import Intent, question, read_answer


@dataclass(frozen=True)
class IntentClassifier:
    client: OpenAIAgent

    @classmethod
    def from_settings(
        cls, settings: Mapping[str, Any], *, model: str | None, timeout: float
    ) -> IntentClassifier:
        """``settings``: the ``[agent.openai]`` section; ``model``: ``[intent] model``
        (None: that section's); ``timeout``: ``[intent] timeout`` in seconds."""
        merged = {**settings, "timeout": timeout, **({"model": model} if model else {})}
        return cls(OpenAIAgent.from_settings(merged))

    @property
    def url(self) -> str:
        return self.client.url

    def classify(self, text: str, today: date) -> Intent:
        """The reply's label; AgentError (TransientAgentError when the server is away
        or slow) when there is none to be had."""
        body: dict[str, Any] = {"model": self.client.model, "messages": question(text, today)}
        if self.client.temperature is not None:
            body["temperature"] = self.client.temperature
        data = self.client.post(body, self.client.api_key())
        try:
            content = data["choices"][0]["message"].get("content")
        except (KeyError, IndexError, TypeError, AttributeError):
            content = None
        intent = read_answer(content)
        if intent is None:
            raise AgentError(f"the model's answer is not a label: {str(content)[:80]!r}")
        return intent
