"""The channel protocol: deliver an outbound message, poll for inbound ones.

A channel never sees the store. The dispatcher hands it an
:class:`Outbound` with an idempotency key (the same key on a retry, so a
provider that supports it never sends twice) and records the provider's
message id it returns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from relay.core.durations import parse_duration
from relay.core.errors import ConfigError, InvalidInput, RelayError
from relay.core.registry import Registry


class ChannelError(RelayError):
    """The channel could not deliver the message."""

    #: Temporary (network, 5xx, 429): the dispatcher retries with backoff.
    #: Permanent (bad address, 4xx): the message fails at once.
    transient: bool = True


class PermanentChannelError(ChannelError):
    """The channel refused the message for good."""

    transient = False


@dataclass(frozen=True)
class Outbound:
    message_id: int
    instance_id: str | None
    to: str
    text: str
    idempotency_key: str


@dataclass(frozen=True)
class Inbound:
    sender: str
    text: str
    received_at: datetime | None = None
    provider_message_id: str | None = None


class Channel(Protocol):
    name: str

    def send(self, message: Outbound) -> str:
        """Deliver ``message``; return the provider's message id."""
        ...

    def poll(self) -> list[Inbound]:
        """Return inbound messages that arrived since the last poll (may be empty)."""
        ...


class BatchChannel(Channel, Protocol):
    """A channel that can also deliver several messages in one call (optional).

    ``send_many`` returns one provider id per message, in order, under the same
    idempotency rules as ``send``; it raises :class:`ChannelError` when it could
    not deliver them, and a retry of the same keys must not deliver any twice.
    The dispatcher uses it, when a channel has it, for a group of deliveries it
    has just confirmed: one fsync or one request per group instead of per message.
    """

    def send_many(self, messages: Sequence[Outbound]) -> list[str]: ...


def batch_sender(channel: Channel) -> Callable[[Sequence[Outbound]], list[str]] | None:
    """The channel's ``send_many``, or None when it delivers one message at a time."""
    send_many = getattr(channel, "send_many", None)
    return send_many if callable(send_many) else None


def setting_flag(name: str, settings: Mapping[str, Any], key: str, default: bool) -> bool:
    """Read a boolean that may arrive as a TOML bool or as text from an environment variable."""
    value = settings.get(key, default)
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off", ""}:
        return False
    raise ConfigError(f"channels.{name}.{key}: expected true or false, got {value!r}")


def setting_seconds(name: str, settings: Mapping[str, Any], key: str, default: str) -> float:
    """Read a duration (``10s``, ``2m`` or a bare number of seconds) as seconds."""
    value = settings.get(key, default)
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    try:
        return parse_duration(str(value)).total_seconds()
    except InvalidInput as exc:
        raise ConfigError(f"channels.{name}.{key}: {exc.message}") from None


def setting_required(name: str, settings: Mapping[str, Any], key: str) -> str:
    value = settings.get(key)
    if value is None or not str(value).strip():
        raise ConfigError(f"channels.{name}.{key} is required")
    return str(value).strip()


def secret_from_env(name: str, variable: str) -> str:
    """Read a secret named by the config at send time, not at start-up.

    Read commands build channels too and should not need the secret; a missing
    one fails the message for good, since retrying cannot make it appear.
    """
    import os

    value = os.environ.get(variable)
    if not value:
        raise PermanentChannelError(
            f"channel {name}: environment variable {variable} is not set or empty"
        )
    return value


ChannelFactory = Callable[[str, Mapping[str, Any]], Channel]
CHANNELS: Registry[ChannelFactory] = Registry(
    "relay.channels", "relay.channels.builtin", "channel type"
)


def register_channel(kind: str, factory: ChannelFactory) -> None:
    CHANNELS.register(kind, factory)


def channel_kinds() -> list[str]:
    return CHANNELS.names()


def make_channel(name: str, settings: Mapping[str, Any]) -> Channel:
    """Build channel ``name`` from its ``[channels.NAME]`` section.

    The section's ``type`` picks the backend and defaults to the name itself,
    so ``[channels.console]`` needs no ``type`` while ``[channels.sales-mail]``
    says ``type = "email"``.
    """
    return CHANNELS.get(str(settings.get("type") or name))(name, settings)
