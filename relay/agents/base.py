"""The agent protocol: a context in, a list of actions out.

An agent never sees the store; it gets a :class:`~relay.core.turns.TurnContext`
and answers with :class:`~relay.core.turns.Action` values. The engine runs it
outside any database transaction and validates the actions before applying
any of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from relay.core.durations import parse_duration
from relay.core.errors import ConfigError, InvalidInput, RelayError
from relay.core.registry import Registry
from relay.core.turns import Action, TurnContext


class AgentError(RelayError):
    """The agent failed."""

    #: A timeout or a server error: the engine retries the turn once.
    transient: bool = False


class TransientAgentError(AgentError):
    """The agent timed out or its server failed; worth one retry."""

    transient = True


class AgentConfigError(AgentError, ConfigError):
    """The agent's settings are not valid.

    Both an AgentError (a turn that hits it goes to NEEDS_HUMAN_INTERVENTION
    with this message) and a ConfigError (the CLI exits 2 when it builds the
    agent up front).
    """


def timeout_seconds(settings: Mapping[str, Any], default: str = "60s") -> float:
    """Read ``[agent] timeout``; TOML may hold a bare number, which means seconds."""
    raw = settings.get("timeout", default)
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        if raw <= 0:
            raise AgentConfigError(f"agent.timeout must be greater than zero, not {raw!r}")
        return float(raw)
    try:
        return parse_duration(str(raw)).total_seconds()
    except InvalidInput as exc:
        raise AgentConfigError(f"agent.timeout: {exc.message}") from None


def excerpt(text: str, limit: int = 200, *, tail: bool = False) -> str:
    """One line of at most ``limit`` characters, because an error reason is shown
    on one line; ``tail`` keeps the end (where a traceback names the error)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return "…" + flat[-(limit - 1) :] if tail else flat[: limit - 1] + "…"


class Agent(Protocol):
    @property
    def name(self) -> str: ...

    def run(self, context: TurnContext) -> list[Action]:
        """Decide this turn's actions. May take seconds (an LLM call)."""
        ...


# name -> factory(settings) where settings is the [agent.NAME] section plus
# the [agent] keys (timeout, ...). The built-ins are named here as entry points
# name theirs, each module imported when such an agent is first built (``openai``
# imports httpx); third-party packages register through the ``relay.agents``
# entry-point group.
AgentFactory = Callable[[Mapping[str, Any]], Agent]
BUILTIN_AGENTS = {
    "scripted": "relay.agents.scripted:ScriptedAgent.from_settings",
    "command": "relay.agents.command:CommandAgent.from_settings",
    "openai": "relay.agents.openai_compat:OpenAIAgent.from_settings",
}
AGENTS: Registry[AgentFactory] = Registry("relay.agents", BUILTIN_AGENTS, "agent")


def register_agent(name: str, factory: AgentFactory) -> None:
    AGENTS.register(name, factory)


def agent_names() -> list[str]:
    return AGENTS.names()


def make_agent(name: str, settings: Mapping[str, Any]) -> Agent:
    return AGENTS.get(name)(settings)
