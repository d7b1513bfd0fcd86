"""How agents are found: built-ins and third-party packages through one registry."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import EntryPoint

import pytest

from relay.agents import base
from relay.agents.base import AgentConfigError, AgentError, agent_names, make_agent, timeout_seconds
from relay.core.errors import ConfigError


def test_the_built_ins_are_registered():
    assert {"scripted", "command", "openai"} <= set(agent_names())


def test_an_unknown_agent_is_a_config_error():
    with pytest.raises(ConfigError, match=r"unknown agent 'nope' \(known: .*scripted"):
        make_agent("nope", {})


def test_the_scripted_agent_does_not_import_httpx():
    code = (
        "import sys\n"
        "from relay.agents.base import make_agent\n"
        "make_agent('scripted', {}); make_agent('command', {'command': 'true'})\n"
        "assert 'httpx' not in sys.modules, 'httpx was imported'\n"
        "make_agent('openai', {'base_url': 'http://x', 'model': 'm'})\n"
        "assert 'httpx' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_third_party_agent_registers_through_an_entry_point(monkeypatch, make_context):
    registry = base.AGENTS if "agents" in base.__name__ else base.CHANNELS
    registry.names()  # load the built-ins first: the copy must hold them when restored
    monkeypatch.setattr(registry, "_factories", dict(registry._factories))
    monkeypatch.setattr(registry, "_entry_points_loaded", False)
    entry = EntryPoint("acme", "relay.agents.scripted:ScriptedAgent.from_settings", "relay.agents")
    monkeypatch.setattr(
        "importlib.metadata.entry_points",
        lambda group=None: [entry] if group == "relay.agents" else [],
    )
    agent = make_agent("acme", {"thanks": "Cheers"})
    assert "acme" in agent_names()
    assert agent.run(make_context())[-1].name == "send_message"


def test_an_agent_config_error_is_both_kinds_of_error():
    error = AgentConfigError("x")
    assert isinstance(error, AgentError) and isinstance(error, ConfigError)
    assert not error.transient and error.exit_code == 2


@pytest.mark.parametrize(("raw", "seconds"), [("90s", 90.0), ("2m", 120.0), (5, 5.0), (0.5, 0.5)])
def test_timeouts_accept_durations_and_numbers(raw, seconds):
    assert timeout_seconds({"timeout": raw}) == seconds


def test_timeout_defaults_to_a_minute():
    assert timeout_seconds({}) == 60.0


@pytest.mark.parametrize("raw", ["soon", 0, -1, True])
def test_bad_timeouts_are_config_errors(raw):
    with pytest.raises(AgentConfigError, match=r"agent\.timeout"):
        timeout_seconds({"timeout": raw})


def test_a_built_in_name_is_known_without_reading_the_entry_points(monkeypatch):
    """``relay start`` checks its agent and channel by name: a built-in one must not
    cost the scan of every installed package for entry points."""
    registry = base.AGENTS
    monkeypatch.setattr(registry, "_factories", dict(registry._factories))
    monkeypatch.setattr(registry, "_entry_points_loaded", False)
    entry = EntryPoint("acme", "relay.agents.scripted:ScriptedAgent.from_settings", "relay.agents")
    read: list[str | None] = []

    def entry_points(group: str | None = None) -> list[EntryPoint]:
        read.append(group)
        return [entry] if group == "relay.agents" else []

    monkeypatch.setattr("importlib.metadata.entry_points", entry_points)
    assert registry.has("scripted") and read == []
    assert registry.has("acme") and read == ["relay.agents"]
    assert not registry.has("nope") and read == ["relay.agents"]
