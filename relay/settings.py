"""Typed settings: relay's own configuration keys as frozen values, built once when
the configuration is loaded (:func:`relay.config.load_config`).

A bad value is found then, named by its key and where it was set (the file, a
``RELAY_*`` variable, a flag), instead of as "invalid literal for int()" deep in
a pulse; and no call site carries its own fallback. Backend sections
(``[channels.NAME]``, ``[agent.NAME]``) stay free-form mappings: each backend
checks its own keys (:meth:`relay.config.Config.section`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from relay.core.durations import parse_duration
from relay.core.errors import ConfigError, InvalidInput


@dataclass(frozen=True)
class DefaultSettings:
    """``[defaults]``: what a new conversation gets unless told otherwise."""

    heartbeat: timedelta
    max_followups: int
    channel: str
    region: str
    timezone: str
    #: The sending window for proactive messages; None: any time.
    window: str | None


@dataclass(frozen=True)
class AgentSettings:
    """``[agent]``: the backend, its turn timeout, and how much transcript it sees."""

    backend: str
    timeout: timedelta
    transcript_window: int
    #: Which of the agent's messages a person approves first: none, first or all.
    approval: str = "none"


@dataclass(frozen=True)
class TurnSettings:
    """``[turns]``: how long a claimed turn is leased to one worker."""

    lease: timedelta


@dataclass(frozen=True)
class OutboxSettings:
    """``[outbox]``: delivery attempts and the first retry delay (doubling)."""

    max_attempts: int
    backoff: timedelta


@dataclass(frozen=True)
class OptOutSettings:
    """``[optout]``: comma-separated words that opt a contact out, and back in."""

    keywords: str
    optin_keywords: str


@dataclass(frozen=True)
class DaemonSettings:
    """``[daemon]``: how often it pulses and polls, and how much one pulse claims."""

    pulse: timedelta
    poll: timedelta
    batch: int


@dataclass(frozen=True)
class McpSettings:
    """``[mcp]``: ``relay mcp --http``: where it listens, the environment variable
    holding its bearer token (the token itself is never in the file), the browser
    origins it accepts, and the longest one ``wait`` call blocks."""

    host: str
    port: int
    token_env: str
    origins: str
    max_wait: timedelta


@dataclass(frozen=True)
class RetentionSettings:
    """``[retention]``: days after which delivery bookkeeping and ended
    conversations' transcripts are pruned (0 keeps them)."""

    outbox_days: int
    transcript_days: int


@dataclass(frozen=True)
class ConsoleSettings:
    """``[console]``: the web console under ``/ui/`` of ``relay serve`` (off unless
    ``enabled``). Tokens and the session key are named by environment variable."""

    enabled: bool
    operator_token_env: str
    readonly_token_env: str
    session_secret_env: str
    session_max_age: timedelta
    #: Allow ``relay serve`` with the console on an address other than loopback.
    allow_remote: bool


@dataclass(frozen=True)
class MetricsSettings:
    """``[metrics]``: ``/metrics`` of ``relay serve`` (Prometheus text format)."""

    enabled: bool
    #: The environment variable holding the bearer token a scraper must send; "" = open.
    token_env: str


@dataclass(frozen=True)
class Settings:
    defaults: DefaultSettings
    agent: AgentSettings
    turns: TurnSettings
    outbox: OutboxSettings
    optout: OptOutSettings
    daemon: DaemonSettings
    retention: RetentionSettings
    mcp: McpSettings
    console: ConsoleSettings
    metrics: MetricsSettings
    #: The ``[[notify]]`` tables, as written (relay.engine.notify checks their keys).
    notify: tuple[Mapping[str, Any], ...]


#: How each of relay's own keys is read: text, a duration, or a whole number at
#: least this large. Keys not listed (backend sections, ``notify``) are not typed here.
KINDS: dict[str, str | int] = {
    "database.url": "text",
    "defaults.heartbeat": "duration",
    "defaults.max_followups": 0,
    "defaults.channel": "name",
    "defaults.region": "name",
    "defaults.timezone": "name",
    "defaults.window": "text",
    "agent.backend": "name",
    "agent.timeout": "seconds",
    "agent.transcript_window": 1,
    "agent.approval": "approval",
    "turns.lease": "duration",
    "outbox.max_attempts": 1,
    "outbox.backoff": "duration",
    "optout.keywords": "text",
    "optout.optin_keywords": "text",
    "daemon.pulse": "duration",
    "daemon.poll": "duration",
    "daemon.batch": 1,
    "mcp.host": "name",
    "mcp.port": 1,
    "mcp.token_env": "name",
    "mcp.origins": "text",
    "mcp.max_wait": "duration",
    "retention.outbox_days": 0,
    "retention.transcript_days": 0,
    "console.enabled": "bool",
    "console.operator_token_env": "text",
    "console.readonly_token_env": "text",
    "console.session_secret_env": "text",
    "console.session_max_age": "duration",
    "console.allow_remote": "bool",
    "metrics.enabled": "bool",
    "metrics.token_env": "text",
}


def convert(key: str, value: Any, where: str) -> Any:
    """``value`` of ``key`` as its type, or a ConfigError naming the key and ``where``
    it was set (the one check of a value, for the file, the environment and flags)."""
    kind = KINDS.get(key)
    if isinstance(kind, int):
        return _count(key, value, where, kind)
    if kind == "seconds" and isinstance(value, int | float) and not isinstance(value, bool):
        return timedelta(seconds=value)  # TOML ``timeout = 60``
    if kind is None:
        return value
    if kind == "bool":
        return _flag(key, value, where)
    return _text(key, value, where, kind)


def _text(key: str, value: Any, where: str, kind: str) -> Any:
    """A text key's value: a name (not empty), a duration (parsed) or plain text."""
    if not isinstance(value, str):
        raise ConfigError(f"{where}: {key} must be text, not {value!r}")
    if kind == "name" and not value.strip():
        raise ConfigError(f"{where}: {key} must not be empty")
    parse = _PARSERS.get(kind)
    return value if parse is None else parse(key, value, where)


def _duration(key: str, value: str, where: str) -> timedelta:
    try:
        return parse_duration(value)
    except InvalidInput as exc:
        raise ConfigError(f"{where}: {key}: {exc.message}") from None


def _approval(key: str, value: str, where: str) -> str:
    from relay.core.approval import MODES

    if value.strip().lower() not in MODES:
        raise ConfigError(f"{where}: {key} must be one of {', '.join(MODES)}, not {value!r}")
    return value.strip().lower()


_PARSERS = {"duration": _duration, "seconds": _duration, "approval": _approval}


def _flag(key: str, value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: {key} must be true or false, not {value!r}")
    return value


def _count(key: str, value: Any, where: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{where}: {key} must be a whole number, not {value!r}")
    if value < least:
        bound = "must not be negative" if least == 0 else f"must be at least {least}"
        raise ConfigError(f"{where}: {key} {bound}, not {value!r}")
    return value


def build_settings(values: Mapping[str, Any], sources: Mapping[str, str]) -> Settings:
    """The typed settings of flat ``values``; ``sources`` says where each was set."""
    typed = {key: convert(key, values[key], sources.get(key, "default")) for key in KINDS}
    return Settings(
        defaults=DefaultSettings(
            heartbeat=typed["defaults.heartbeat"],
            max_followups=typed["defaults.max_followups"],
            channel=typed["defaults.channel"],
            region=typed["defaults.region"],
            timezone=typed["defaults.timezone"],
            window=typed["defaults.window"].strip() or None,
        ),
        agent=AgentSettings(
            backend=typed["agent.backend"],
            timeout=typed["agent.timeout"],
            transcript_window=typed["agent.transcript_window"],
            approval=typed["agent.approval"],
        ),
        turns=TurnSettings(lease=typed["turns.lease"]),
        outbox=OutboxSettings(
            max_attempts=typed["outbox.max_attempts"], backoff=typed["outbox.backoff"]
        ),
        optout=OptOutSettings(
            keywords=typed["optout.keywords"], optin_keywords=typed["optout.optin_keywords"]
        ),
        daemon=DaemonSettings(
            pulse=typed["daemon.pulse"], poll=typed["daemon.poll"], batch=typed["daemon.batch"]
        ),
        retention=RetentionSettings(
            outbox_days=typed["retention.outbox_days"],
            transcript_days=typed["retention.transcript_days"],
        ),
        mcp=McpSettings(
            host=typed["mcp.host"],
            port=typed["mcp.port"],
            token_env=typed["mcp.token_env"],
            origins=typed["mcp.origins"],
            max_wait=typed["mcp.max_wait"],
        ),
        console=ConsoleSettings(
            enabled=typed["console.enabled"],
            operator_token_env=typed["console.operator_token_env"],
            readonly_token_env=typed["console.readonly_token_env"],
            session_secret_env=typed["console.session_secret_env"],
            session_max_age=typed["console.session_max_age"],
            allow_remote=typed["console.allow_remote"],
        ),
        metrics=MetricsSettings(
            enabled=typed["metrics.enabled"], token_env=typed["metrics.token_env"]
        ),
        notify=tuple(values.get("notify") or ()),
    )
