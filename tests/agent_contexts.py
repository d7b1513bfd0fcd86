"""The ``make_context`` fixture: a TurnContext from plain values, for the agent
backends' tests (unit and integration both import it into their conftest)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from relay.core.turns import ContextMessage, ContextTodo, TurnContext, TurnReason

__all__ = ["MakeContext", "make_context"]

MakeContext = Callable[..., TurnContext]


def _message(index: int, item: str | tuple[str, str]) -> ContextMessage:
    """``"text"`` is the contact speaking; ``("agent", "text")`` names the author."""
    author, text = ("contact", item) if isinstance(item, str) else item
    direction = "inbound" if author == "contact" else "outbound"
    return ContextMessage(index, direction, author, text, "2024-05-01T09:00:00Z")


@pytest.fixture
def make_context() -> MakeContext:
    """Build a TurnContext from plain values: todos as text or (text, status) pairs."""

    def build(
        reason: TurnReason | str = TurnReason.FIRST_MESSAGE,
        todos: list[str | tuple[str, str]] | None = None,
        transcript: list[str | tuple[str, str]] | None = None,
        new: list[str | tuple[str, str]] | None = None,
        **extra: Any,
    ) -> TurnContext:
        items = todos if todos is not None else ["Delivery date", "Invoice address"]
        context_todos = tuple(
            ContextTodo(i, *((item, "pending") if isinstance(item, str) else item))
            for i, item in enumerate(items, start=1)
        )
        old = [_message(i, m) for i, m in enumerate(transcript or [], start=1)]
        fresh = [_message(len(old) + i, m) for i, m in enumerate(new or [], start=1)]
        fields: dict[str, Any] = {
            "instance_id": "r7k2",
            "reason": TurnReason(reason),
            "objective": "the order you placed last week",
            "contact": "ada@example.com",
            "todos": context_todos,
            "transcript": tuple(old + fresh),
            "new_messages": tuple(fresh),
            "now": "2024-05-01T10:00:00Z",
        }
        fields.update(extra)
        return TurnContext(**fields)

    return build
