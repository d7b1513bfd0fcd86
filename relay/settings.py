"""Relay's own configuration keys, each declared once: its name (section and
field), type, default, how a value is checked, and its help text. The built-in
defaults (:data:`DEFAULTS`), the kinds (:data:`KINDS`), the typed settings and
the table "Every setting" of docs/configuration.md are all derived from these
declarations (``python -m relay.cli.config_reference`` rewrites that table; a test
fails when it drifts).

The typed settings are frozen values built once when the configuration is
loaded (:func:`relay.config.load_config`). A bad value is found then, named by
its key and where it was set (the file, a ``RELAY_*`` variable, a flag),
instead of as "invalid literal for int()" deep in a pulse; and no call site
carries its own fallback. Backend sections (``[channels.NAME]``,
``[agent.NAME]``) stay free-form mappings: each backend checks its own keys
(:meth:`relay.config.Config.section`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from relay.setting_kinds import (
    APPROVAL,
    BOOL,
    DURATION,
    NAME,
    OPTIONAL,
    OPTOUT_SCOPE,
    SECONDS,
    TABLES,
    TEXT,
    WINDOW,
    Declared,
    Kind,
    build,
    declared_keys,
    key,
    read_value,
)

__all__ = [
    "APPROVAL", "BOOL", "DURATION", "KEYS", "NAME", "OPTIONAL", "OPTOUT_SCOPE", "SECONDS",
    "TABLES", "TEXT", "WINDOW", "Kind", "Settings", "build_settings", "convert", "key",
]  # fmt: skip


@dataclass(frozen=True)
class DatabaseSettings:
    """``[database]``: where the instance store is."""

    url: str = key(
        "", TEXT,
        "SQLAlchemy URL of the instance store; empty means `.relay/relay.db` (SQLite) next to "
        "the config",
    )  # fmt: skip


@dataclass(frozen=True)
class DefaultSettings:
    """``[defaults]``: what a new conversation gets unless told otherwise."""

    heartbeat: timedelta = key(
        "30m", DURATION,
        "silence before a follow-up, for new conversations (`90s`, `30m`, `2h`, `1d`, `1h30m`); "
        "`relay start --heartbeat` overrides it",
    )  # fmt: skip
    max_followups: int = key(
        5, 0,
        "follow-ups per conversation before the next heartbeat abandons it; "
        "`relay start --max-followups` overrides it",
    )  # fmt: skip
    channel: str = key(
        "console", NAME,
        "channel for new conversations; a name from `[channels.NAME]` or a built-in type "
        "(see [channels](channels.md))",
    )  # fmt: skip
    fallback_after: timedelta = key(
        "2d", DURATION,
        "with a channel ladder (`relay start --channel whatsapp,sms,email`): the contact's "
        "silence after a message went out on one channel before the next message goes on the "
        "next; `relay start --fallback-after` overrides it (see [Channel fallback](fallback.md))",
    )  # fmt: skip
    region: str = key(
        "US", NAME,
        "region for phone numbers written without `+country` (`555 123 0001` becomes "
        "`+15551230001`)",
    )  # fmt: skip
    timezone: str = key(
        "UTC", NAME,
        "contacts' time zone (IANA name) for sending windows, unless set per contact with "
        "`relay contact`",
    )  # fmt: skip
    #: The sending window for proactive messages; None: any time.
    window: str | None = key(
        "", WINDOW,
        "when proactive messages (first messages, follow-ups) may go out, in the contact's "
        "time zone, such as `mon-fri 09:00-18:00`; empty means any time",
    )  # fmt: skip


@dataclass(frozen=True)
class AgentSettings:
    """``[agent]``: the backend, its turn timeout, and how much transcript it sees."""

    backend: str = key(
        "scripted", NAME,
        "agent for new conversations: `scripted`, `command`, `openai`, or a plugin "
        "(see [agents](agents.md))",
    )  # fmt: skip
    timeout: timedelta = key("60s", SECONDS, "how long one agent turn may take")
    transcript_window: int = key(50, 1, "how many recent transcript messages a turn sees")
    approval: str = key(
        "none", APPROVAL,
        "which of the agent's messages a person approves before they go out: `none`, `first` "
        "(every message until one is approved: the opening one), `all`; `relay start "
        "--approval` overrides it (see [Drafts](programs.md#drafts-a-person-approves))",
    )  # fmt: skip


@dataclass(frozen=True)
class TurnSettings:
    """``[turns]``: how long a claimed turn is leased to one worker."""

    lease: timedelta = key(
        "5m", DURATION,
        "how long a claimed turn is reserved for the process running it; after that another "
        "process may take it over",
    )  # fmt: skip


@dataclass(frozen=True)
class OutboxSettings:
    """``[outbox]``: delivery attempts and the first retry delay (doubling)."""

    max_attempts: int = key(
        5, 1,
        "delivery attempts for one outbound message; after the last failed attempt (or at once "
        "on a permanent error) the message is `failed` and the conversation goes to "
        "NEEDS_HUMAN_INTERVENTION",
    )  # fmt: skip
    backoff: timedelta = key(
        "30s", DURATION,
        "delay before the first retry of a failed delivery; it doubles with each attempt",
    )  # fmt: skip
    resend_unknown: bool = key(
        False, BOOL,
        "after a crash, send again a message whose channel cannot tell whether it went and "
        "does not declare a second hand-over safe (SMS without a reachable Twilio, email "
        "without `imap_sent_mailbox`, Telegram); off, such a message waits with its fate "
        "`unknown` until `relay retry` (see [reliability](reliability.md))",
    )  # fmt: skip


@dataclass(frozen=True)
class OptOutSettings:
    """``[optout]``: comma-separated words that opt a contact out, and back in."""

    keywords: str = key(
        "STOP,STOPALL,UNSUBSCRIBE,END,QUIT,CANCEL,REVOKE,OPTOUT", TEXT,
        "comma-separated words that opt a contact out when one stands as a clause of its own, "
        'alone or with politeness and object words around it ("STOP", "Stop. Thank you", '
        '"please stop", "stop texting me"); inside a sentence about something else it does not '
        'count ("End of May works", "Cancel the delivery")',
    )  # fmt: skip
    optin_keywords: str = key(
        "START,UNSTOP,YES", TEXT,
        "words that opt a contact back in (the carriers' opt-in keywords); they count only from "
        "a contact who has opted out",
    )  # fmt: skip


@dataclass(frozen=True)
class IntentSettings:
    """``[intent]``: the optional classifier that labels each reply, through the server
    of ``[agent.openai]`` (see docs/channels.md#intent-labels-optional)."""

    enabled: bool = key(
        False, BOOL,
        "label each reply (opt_out, out_of_office, wrong_person, not_now, interested, "
        "referral, other) through the OpenAI-compatible server of `[agent.openai]` "
        "(`base_url`, `api_key_env`); off, no reply is sent anywhere (see "
        "[intent labels](channels.md#intent-labels-optional))",
    )  # fmt: skip
    model: str | None = key("", OPTIONAL, "the model that labels; empty: `[agent.openai] model`")
    timeout: timedelta = key(
        "10s", SECONDS,
        "how long one label may take; after a timeout or an error the rules decide alone "
        "and the classifier rests for a minute",
    )  # fmt: skip
    opt_out: bool = key(
        True, BOOL,
        "a reply labelled `opt_out` opts the contact out even when no rule read one; "
        "`false`: the label is only stored",
    )  # fmt: skip


@dataclass(frozen=True)
class BounceSettings:
    """``[bounces]``: this many soft bounces (mailbox full, blocked, ...) of one address
    within ``soft_window`` mark it undeliverable (0: never)."""

    soft_limit: int = key(
        3, 0,
        "soft bounces (mailbox full, blocked, rate limited, ...) of one address within "
        "`soft_window` that mark it undeliverable; `0` never marks it for soft bounces",
    )  # fmt: skip
    soft_window: timedelta = key(
        "30d", DURATION, "the window in which soft bounces of one address are counted"
    )


@dataclass(frozen=True)
class DaemonSettings:
    """``[daemon]``: how often it pulses and polls, and how much one pulse claims."""

    pulse: timedelta = key(
        "1s", DURATION, "how often the daemon claims due work (turns, heartbeats, deliveries)"
    )
    poll: timedelta = key(
        "30s", DURATION, "how often the daemon polls channels for inbound messages"
    )
    batch: int = key(
        500, 1,
        "the most items of each kind (snoozes, heartbeats, turns, deliveries) that one pulse "
        "takes on",
    )  # fmt: skip


@dataclass(frozen=True)
class RetentionSettings:
    """``[retention]``: days after which delivery bookkeeping and ended
    conversations' transcripts are pruned (0 keeps them)."""

    outbox_days: int = key(
        30, 0,
        "clear the delivery bookkeeping (idempotency keys, errors) of messages sent longer ago "
        "than this, and the rows of daemons that last pulsed longer ago; `0` keeps it",
    )  # fmt: skip
    transcript_days: int = key(
        0, 0,
        "delete transcripts of conversations that ended longer ago than this; `0` keeps them "
        "forever (the history stays either way)",
    )  # fmt: skip


@dataclass(frozen=True)
class ConsoleSettings:
    """``[console]``: the web console under ``/ui/`` of ``relay serve`` (off unless
    ``enabled``). Tokens and the session key are named by environment variable."""

    enabled: bool = key(
        False, BOOL,
        "serve the web console under `/ui/` of `relay serve` (see [the web console](console.md))",
    )  # fmt: skip
    operator_token_env: str = key(
        "", TEXT,
        "the variable holding the operator's token or password hash "
        "(`python -m relay.console.passwords`)",
    )  # fmt: skip
    readonly_token_env: str = key("", TEXT, "the same for read-only users")
    session_secret_env: str = key(
        "", TEXT,
        "the variable holding the key that signs session cookies; empty: a random key per "
        "process",
    )  # fmt: skip
    session_max_age: timedelta = key("12h", DURATION, "how long a console session lasts")
    #: Allow ``relay serve`` with the console on an address other than loopback.
    allow_remote: bool = key(
        False, BOOL,
        "allow the console on a non-loopback `relay serve --host` (otherwise refused: put a "
        "TLS proxy in front)",
    )  # fmt: skip


@dataclass(frozen=True)
class MetricsSettings:
    """``[metrics]``: ``/metrics`` of ``relay serve`` (Prometheus text format)."""

    enabled: bool = key(
        True, BOOL,
        "serve `GET /metrics` (Prometheus text) from `relay serve` (see "
        "[operations](operations.md#metrics-prometheus))",
    )  # fmt: skip
    #: The environment variable holding the bearer token a scraper must send; "" = open.
    token_env: str = key(
        "", TEXT,
        "the variable holding the bearer token a scraper must send; empty: `/metrics` is open",
    )  # fmt: skip


@dataclass(frozen=True)
class McpSettings:
    """``[mcp]``: ``relay mcp --http``: where it listens, the variable holding its bearer
    token (never the token), the browser origins it accepts, the longest ``wait``."""

    host: str = key(
        "127.0.0.1", NAME, "where `relay mcp --http` listens (loopback: only this machine)"
    )
    port: int = key(8765, 1, "its port (`--port 0`: any free one, printed on stderr)")
    token_env: str = key(
        "RELAY_MCP_TOKEN", NAME,
        "the environment variable that holds the bearer token every request must carry; the "
        "token is never stored in the file, and without it the server does not start",
    )  # fmt: skip
    origins: str = key(
        "http://127.0.0.1:*,http://localhost:*", TEXT,
        "comma-separated browser origins accepted (`:*` any port); a request with any other "
        "`Origin` header is refused (403)",
    )  # fmt: skip
    max_wait: timedelta = key(
        "50s", DURATION,
        "the longest one MCP `wait` call blocks over HTTP; then it answers with `next`, the "
        "arguments that carry on",
    )  # fmt: skip


@dataclass(frozen=True)
class ComplianceSettings:
    """``[compliance]``: consent records, erasure, legal hours (see docs/compliance.md)."""

    require_consent: bool = key(
        False, BOOL,
        "refuse `relay start` and `relay import` of a contact without a consent record "
        "(`--consent`, a `consent` column)",
    )  # fmt: skip
    erasure_key_env: str = key(
        "RELAY_ERASURE_KEY", NAME,
        "the environment variable holding the key (16 or more characters) that hashes erased "
        "addresses; `relay contact erase` needs it, and `start` and `import` are refused while "
        "erasures exist and it is not set",
    )  # fmt: skip
    legal_hours: bool = key(
        True, BOOL,
        "hold proactive messages to phone numbers outside the legal calling and texting hours "
        "of the number's place, on top of the sending window (see [compliance](compliance.md))",
    )  # fmt: skip
    holidays: bool = key(
        False, BOOL,
        "hold proactive messages on public holidays of the contact's country (needs the "
        "`holidays` package: `pip install 'relay-outreach[holidays]'`)",
    )  # fmt: skip
    optout_scope: str = key("contact", OPTOUT_SCOPE, "what a no stops: `contact` or `channel`")


@dataclass(frozen=True)
class Settings:
    """Relay's own keys, typed: a field per section, plus the ``[[notify]]`` tables."""

    database: DatabaseSettings
    defaults: DefaultSettings
    agent: AgentSettings
    turns: TurnSettings
    outbox: OutboxSettings
    optout: OptOutSettings
    intent: IntentSettings
    bounces: BounceSettings
    daemon: DaemonSettings
    retention: RetentionSettings
    mcp: McpSettings
    console: ConsoleSettings
    metrics: MetricsSettings
    compliance: ComplianceSettings
    #: The ``[[notify]]`` tables, as written (relay.engine.verbs.notify checks their keys).
    notify: tuple[Mapping[str, Any], ...] = key(
        [], TABLES,
        "`[[notify]]` tables: a webhook `url` or a `command` told of chosen `events` "
        "(needs_human, done, reply, failed, draft); see "
        "[Driving relay from a program](programs.md#notifications-notify)",
    )  # fmt: skip


#: Every key relay knows, in the order of :class:`Settings`.
KEYS: tuple[Declared, ...] = declared_keys(Settings)
#: The built-in defaults of every key (the first layer of the configuration).
DEFAULTS: dict[str, Any] = {k.name: k.default for k in KEYS}
#: How each key is read: a kind above, or a whole number at least this large.
KINDS: dict[str, Kind] = {k.name: k.kind for k in KEYS}


def convert(key: str, value: Any, where: str) -> Any:
    """``value`` of ``key`` as its declared type (:func:`relay.setting_kinds.read_value`)."""
    return read_value(KINDS.get(key), key, value, where)


def build_settings(values: Mapping[str, Any], sources: Mapping[str, str]) -> Settings:
    """The typed settings of flat ``values``; ``sources`` says where each was set."""
    return build(Settings, KEYS, values, sources)
