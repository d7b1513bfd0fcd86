"""Typed settings: built once when the configuration loads, checked there."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from relay.config import load_config
from relay.core.errors import ConfigError


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "relay.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_durations_are_timedeltas_and_counts_are_ints(tmp_path: Path) -> None:
    path = _write(tmp_path, '[defaults]\nheartbeat = "2h"\n[daemon]\nbatch = 50\n')
    settings = load_config(path, env={}).settings
    assert settings.defaults.heartbeat == timedelta(hours=2)
    assert settings.daemon.batch == 50
    assert settings.daemon.pulse == timedelta(seconds=1)  # the built-in default
    assert settings.defaults.window is None  # empty: any time


def test_a_bare_number_is_seconds_for_the_agent_timeout(tmp_path: Path) -> None:
    settings = load_config(_write(tmp_path, "[agent]\ntimeout = 90\n"), env={}).settings
    assert settings.agent.timeout == timedelta(seconds=90)


def test_a_bad_file_value_names_the_key_and_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, '[defaults]\nmax_followups = "five"\n')
    with pytest.raises(ConfigError, match=r"relay\.toml: defaults\.max_followups must be a whole"):
        load_config(path, env={})


def test_a_bad_flag_value_is_found_when_the_configuration_loads(tmp_path: Path) -> None:
    path = _write(tmp_path, "")
    with pytest.raises(ConfigError, match=r"^flag: daemon\.poll: "):
        load_config(path, env={}, overrides={"daemon.poll": "often"})
    with pytest.raises(ConfigError, match=r"^flag: daemon\.batch must be at least 1, not 0"):
        load_config(path, env={}, overrides={"daemon.batch": 0})


def test_an_environment_value_is_checked_too(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="RELAY_TURNS_LEASE"):
        load_config(_write(tmp_path, ""), env={"RELAY_TURNS_LEASE": "a while"})


def test_an_unknown_key_suggests_the_nearest(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"did you mean defaults\.heartbeat"):
        load_config(_write(tmp_path, '[defaults]\nheartbeet = "1h"\n'), env={})
