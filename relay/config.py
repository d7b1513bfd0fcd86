"""Configuration: built-in defaults, then relay.toml, then RELAY_* variables, then flags.

Values are kept flat under dotted keys (``database.url``) with the layer each
came from, so ``relay config show`` can say where every value was set.
Secrets are never stored in the file: sections name the environment variable
that holds them (``api_key_env = "OPENAI_API_KEY"``). Relay's own keys (their
defaults, types and checks) are declared once, in :mod:`relay.settings`.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from relay.core.errors import ConfigError
from relay.core.secrets import is_secret_key
from relay.settings import (
    BOOL,
    DEFAULTS,
    KEYS,
    KINDS,
    TABLES,
    Declared,
    Settings,
    build_settings,
    convert,
)

#: Re-exported for the CLI, which reads the configuration through this module only.
__all__ = ["DEFAULTS", "KEYS", "TABLES", "Config", "Declared", "env_name", "load_config"]

CONFIG_NAME = "relay.toml"
DATA_DIR = ".relay"

#: Sections whose sub-tables belong to a backend (``[channels.email]``,
#: ``[agent.command]``): their keys are the backend's to check, not ours.
BACKEND_SECTIONS = ("channels", "agent")


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten(value, dotted + "."))
        else:
            flat[dotted] = value
    return flat


def env_name(key: str) -> str:
    """``database.url`` -> ``RELAY_DATABASE_URL``."""
    return "RELAY_" + key.replace(".", "_").upper()


def _coerce(key: str, raw: str) -> Any:
    if KINDS.get(key) == BOOL:
        return raw.strip().lower() in {"1", "true", "yes", "on"}
    if isinstance(KINDS.get(key), int):
        try:
            return int(raw)
        except ValueError:
            raise ConfigError(f"{env_name(key)}={raw!r} is not a whole number") from None
    return raw


def check_key(key: str, where: str) -> None:
    """Refuse a key relay does not know (a typo would otherwise be ignored silently)
    and a secret written into the file; backend sections keep free-form keys."""
    if is_secret_key(key):
        name = key.rsplit(".", 1)[-1]
        raise ConfigError(
            f"{where}: {key} holds a secret in the file; "
            f'use {name}_env = "NAME_OF_VARIABLE" and put the secret in that variable'
        )
    parts = key.split(".")
    if len(parts) >= 3 and parts[0] in BACKEND_SECTIONS:
        return
    if key in DEFAULTS:
        return
    if parts[0] == "channels":
        raise ConfigError(f"{where}: {key} must be a table such as [channels.console]")
    close = difflib.get_close_matches(key, list(DEFAULTS), n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    raise ConfigError(f"{where}: unknown setting {key}{hint}")


def check_value(key: str, value: Any, where: str) -> None:
    """A known key's value must have its type (and a duration must parse) at load time,
    so the error names the key and where it was set, not a later int() failure."""
    if key in DEFAULTS:
        convert(key, value, where)


@dataclass
class Config:
    """The effective configuration and where each value came from.

    ``settings`` holds relay's own keys typed (durations as timedelta), built and
    checked when the configuration is made; ``get`` and ``section`` are for
    ``relay config show`` and the backends' free-form sections.
    """

    values: dict[str, Any]
    sources: dict[str, str]
    path: Path | None
    base_dir: Path
    settings: Settings = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.settings = build_settings(self.values, self.sources)

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def section(self, prefix: str) -> dict[str, Any]:
        """All keys under ``prefix.`` with the prefix removed (``channels.console``)."""
        cut = prefix + "."
        return {k[len(cut) :]: v for k, v in self.values.items() if k.startswith(cut)}

    @property
    def data_dir(self) -> Path:
        return self.base_dir / DATA_DIR

    @property
    def database_url(self) -> str:
        url = str(self.get("database.url") or "")
        return url or f"sqlite:///{self.data_dir / 'relay.db'}"

    @property
    def uses_default_database(self) -> bool:
        return not self.get("database.url")

    def with_overrides(self, overrides: Mapping[str, Any]) -> Config:
        values, sources = dict(self.values), dict(self.sources)
        for key, value in overrides.items():
            if value is not None:
                values[key] = value
                sources[key] = "flag"
        return Config(values, sources, self.path, self.base_dir)


def find_config_path(explicit: str | Path | None = None) -> Path | None:
    """The file named by --config, else RELAY_CONFIG, else the nearest relay.toml in
    the current folder or above it (as git finds its repository), so a command run
    in a subfolder uses the project's database instead of creating an empty one."""
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist")
        return path.resolve()
    from_env = os.environ.get("RELAY_CONFIG")
    if from_env:
        path = Path(from_env)
        if not path.is_file():
            raise ConfigError(f"RELAY_CONFIG names {path}, which does not exist")
        return path.resolve()
    return _nearest(Path.cwd(), CONFIG_NAME)


#: Folders (os.pathsep-separated) where the upward search stops before looking,
#: as git's GIT_CEILING_DIRECTORIES: a stray relay.toml or .relay/ in /tmp or a
#: home folder must not capture a run (or a test) in a folder below it.
CEILING_ENV = "RELAY_CEILING_DIRECTORIES"


def _ceilings() -> set[Path]:
    value = os.environ.get(CEILING_ENV, "")
    return {Path(part).resolve() for part in value.split(os.pathsep) if part}


def _nearest(start: Path, name: str) -> Path | None:
    """``start/name`` or the same name in the nearest folder above that has it."""
    here = start.resolve()
    ceilings = _ceilings()
    for folder in (here, *here.parents):
        if folder in ceilings:
            return None
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None


def find_base_dir() -> Path:
    """With no relay.toml: the nearest folder (here or above) whose ``.relay/``
    holds a database made without one, else the current folder."""
    found = _nearest(Path.cwd(), f"{DATA_DIR}/relay.db")
    return found.parent.parent if found is not None else Path.cwd()


def load_config(
    explicit: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    env = os.environ if env is None else env
    path = find_config_path(explicit)
    values = dict(DEFAULTS)
    sources = dict.fromkeys(DEFAULTS, "default")
    if path is not None:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: invalid TOML: {exc}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(
                f"{path}: not UTF-8 (byte {exc.start}: {exc.object[exc.start : exc.start + 1]!r});"
                " TOML files are UTF-8"
            ) from None
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read it: {exc.strerror or exc}") from None
        for key, value in _flatten(data).items():
            check_key(key, str(path))
            check_value(key, value, str(path))
            values[key] = value
            sources[key] = str(path)
    for key in list(values):
        name = env_name(key)
        if name in env:
            values[key] = _coerce(key, env[name])
            sources[key] = f"env {name}"
            check_value(key, values[key], f"environment variable {name}")
    base_dir = path.parent if path is not None else find_base_dir()
    config = Config(values, sources, path, base_dir)
    return config.with_overrides(overrides or {})


TEMPLATE = """\
# relay configuration. Precedence: this file, then RELAY_* environment
# variables (RELAY_DATABASE_URL, RELAY_DEFAULTS_HEARTBEAT, ...), then flags.
# Secrets never go here: name the environment variable that holds them.

[database]
# Empty means a SQLite file at .relay/relay.db next to this file.
# For several daemons sharing the work, use PostgreSQL:
# url = "postgresql://relay@127.0.0.1:5432/relay"
url = ""

[defaults]
heartbeat = "30m"        # silence before a follow-up: 90s, 30m, 2h, 1d
max_followups = 5        # follow-ups per silence; the next heartbeat abandons
channel = "console"      # channel for new conversations
region = "US"            # default region for phone numbers without a +country code
timezone = "UTC"         # contacts' time zone unless set per contact
window = ""              # proactive-message window, e.g. "mon-fri 09:00-18:00"; empty = any time

[agent]
backend = "scripted"     # scripted | command | openai
timeout = "60s"
transcript_window = 50   # recent transcript messages an agent sees
approval = "none"        # none | first | all: the agent's messages a person approves first

# [agent.command]
# command = ["python3", "examples/echo_agent.py"]

# [agent.openai]
# base_url = "https://api.openai.com/v1"
# model = "gpt-4o-mini"
# api_key_env = "OPENAI_API_KEY"

[outbox]
max_attempts = 5         # delivery attempts before the message fails
backoff = "30s"          # first retry delay, doubling each attempt

[optout]
keywords = "STOP,STOPALL,UNSUBSCRIBE,END,QUIT,CANCEL,REVOKE,OPTOUT"
optin_keywords = "START,UNSTOP,YES"   # only from a contact who opted out

[bounces]
soft_limit = 3           # this many soft bounces (mailbox full, blocked...) of one address,
soft_window = "30d"      # ... within this window, mark it undeliverable (soft_limit 0: never)

[channels.console]
# file = ".relay/console.jsonl"          # where "sent" messages are recorded
# inbox = ".relay/console-inbox.jsonl"   # lines {"from": ..., "text": ...} read by polling
# echo = true                            # also print each message on stderr
# rate = "30/minute"                     # per-channel rate limit (any channel)

[daemon]
pulse = "1s"             # how often the daemon looks for due work
poll = "30s"             # how often channels are polled for inbound messages

[mcp]                    # relay mcp --http
host = "127.0.0.1"       # loopback: only programs on this machine reach it
port = 8765
token_env = "RELAY_MCP_TOKEN"   # the variable holding the bearer token (never the token)
origins = "http://127.0.0.1:*,http://localhost:*"   # browser origins accepted
max_wait = "50s"         # the longest one `wait` call blocks; it returns `next` to go on

[retention]
outbox_days = 30         # prune delivery bookkeeping of messages sent this long ago
transcript_days = 0      # 0 keeps transcripts of ended conversations forever
"""
