"""Register the built-in agents, through the same registry third-party agents use.

``openai`` is registered by a factory that imports its module (and so httpx)
only when such an agent is built: ``make_agent("scripted", ...)`` stays light.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relay.agents.base import Agent, register_agent
from relay.agents.command import CommandAgent
from relay.agents.scripted import ScriptedAgent


def _openai(settings: Mapping[str, Any]) -> Agent:
    from relay.agents.openai_compat import OpenAIAgent

    return OpenAIAgent.from_settings(settings)


register_agent("scripted", ScriptedAgent.from_settings)
register_agent("command", CommandAgent.from_settings)
register_agent("openai", _openai)
