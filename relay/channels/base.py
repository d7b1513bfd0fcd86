"""The channel protocol: deliver an outbound message, bring inbound ones in.

A channel never sees the store. The dispatcher hands it an
:class:`Outbound` with an idempotency key (the same key on a retry, so a
provider that supports it never sends twice) and the conversation's thread,
and records the provider's message id it returns.

Polling is at-least-once and costs nothing to repeat: ``poll(cursor)`` gets
the position the store holds for this channel (``None`` the first time) and
returns what arrived after it with the position after those messages. relay
stores the messages, the receipts and the new position in one transaction,
so a crash, a locked database or an outage between the poll and the commit
leaves the old position in place and the same messages are read again;
de-duplication by provider message id makes the second reading harmless.
Push channels (Twilio, webhooks) hand the same :class:`Incoming` to
``relay serve`` instead, without a position.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from relay.core.durations import parse_duration
from relay.core.errors import ConfigError, InvalidInput, RelayError
from relay.core.intents import Intent
from relay.core.registry import Registry, load_path
from relay.core.values import DeliveryStatus, InboundKind


class ChannelError(RelayError):
    """The channel could not deliver the message."""

    #: Temporary (network, 5xx, 429): the dispatcher retries with backoff.
    #: Permanent (bad address, 4xx): the message fails at once.
    transient: bool = True
    #: Keep the message queued without counting the attempt (:class:`ChannelUnavailable`).
    hold: bool = False
    #: The recipient opted out with the provider (:class:`RecipientOptedOut`).
    opted_out: bool = False

    def __init__(self, message: str | None = None, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        #: Seconds the provider asked to wait (``Retry-After``, Telegram's
        #: ``retry_after``): the retry waits at least this long.
        self.retry_after = retry_after


class PermanentChannelError(ChannelError):
    """The channel refused the message for good."""

    transient = False


class ChannelUnavailable(ChannelError):
    """The channel cannot send anything now, and retrying will not fix it until a
    person does (bad credentials, a suspended account): the dispatcher keeps the
    message queued without using up an attempt and logs this error each time."""

    hold = True


class RecipientOptedOut(PermanentChannelError):
    """The provider refuses because the recipient opted out with it (Twilio 21610):
    the dispatcher opts the contact out, as a STOP reply would."""

    opted_out = True


@dataclass(frozen=True)
class Outbound:
    message_id: int
    instance_id: str | None
    to: str
    text: str
    idempotency_key: str
    #: Provider ids of the conversation's earlier messages, oldest first, both
    #: directions (an email's Message-IDs): what a threaded channel answers to.
    thread: tuple[str, ...] = ()
    #: The conversation's subject, for channels that have one.
    subject: str | None = None
    #: An unguessable token naming the contact and conversation, for a one-click
    #: unsubscribe link to ``relay serve`` (``POST /unsubscribe/<token>``).
    unsubscribe_token: str | None = None
    #: When the contact last wrote on any channel (None: never): WhatsApp takes free
    #: text only within 24 hours of it, templates outside.
    last_inbound_at: datetime | None = None
    #: The conversation's own approved template (``relay start --whatsapp-template``),
    #: preferred to the channel's when only a template may go.
    template: ContentTemplate | None = None


@dataclass(frozen=True)
class ContentTemplate:
    """An approved template (a Twilio Content SID) and its variables, whose values
    may name ``{text}`` and ``{instance_id}``; no variables: the channel's."""

    sid: str
    variables: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_json(cls, value: Mapping[str, Any] | None) -> ContentTemplate | None:
        """The stored form (``{"sid": ..., "variables": {...}}``), or None."""
        if not value or not value.get("sid"):
            return None
        variables = value.get("variables") or {}
        return cls(str(value["sid"]), tuple((str(k), str(v)) for k, v in variables.items()))


@dataclass(frozen=True)
class Inbound:
    sender: str
    text: str
    received_at: datetime | None = None
    #: The provider's id for the message: re-reading the same message stores it once.
    provider_message_id: str | None = None
    #: Provider ids this message answers (In-Reply-To first, then References,
    #: newest first): routed to that conversation before the sender's live one.
    references: tuple[str, ...] = ()
    kind: InboundKind = InboundKind.MESSAGE
    #: The message as it arrived (a whole email), kept for audit; ``text`` is
    #: what the agent sees.
    raw: str | None = None
    #: An auto-reply that names a return date: the conversation pauses until then.
    resume_at: datetime | None = None
    #: A deep link's start parameter (Telegram's ``/start <token>``): when relay
    #: made the token, it binds the sender to the contact the token names, and
    #: the message is not stored as a reply.
    bind_token: str | None = None
    #: What ``[intent]``'s classifier read in it: set by relay before it stores the
    #: message (:mod:`relay.engine.verbs.intents`); a channel leaves it None.
    intent: Intent | None = None


@dataclass(frozen=True)
class Receipt:
    """What the provider says became of an outbound message (a status callback, a bounce)."""

    provider_message_id: str
    status: DeliveryStatus
    error: str | None = None
    #: The address will never work (a hard bounce, an unknown number): no more sends to it.
    permanent: bool = False
    #: The provider refuses because the recipient opted out with it (Twilio 21610), or
    #: the recipient complained of abuse (``status`` delivered, ``reason`` "complaint").
    opted_out: bool = False
    at: datetime | None = None
    #: Why it bounced (a :class:`relay.core.bounce_reasons.BounceReason` value), or the
    #: opt-out reason of a complaint.
    reason: str | None = None


@dataclass(frozen=True)
class Rejected:
    """Something that arrived and cannot be read as a message (a mail the parser
    cannot take, a malformed line or update): kept aside with the reason, listed by
    ``relay inbox --kind rejected``, so that the position moves past it without
    losing it, and it never holds back what came after it."""

    reason: str
    #: What arrived, as a column can hold it (:func:`relay.core.storable.raw_for_store`).
    raw: str = ""
    sender: str = ""
    provider_message_id: str | None = None


@dataclass(frozen=True)
class Incoming:
    """What one poll (or one pushed request) brought in.

    ``cursor`` is the channel's read position after these messages (an IMAP
    UID, an update offset, a file offset), opaque to relay; None leaves the
    stored position as it is.
    """

    messages: Sequence[Inbound] = ()
    receipts: Sequence[Receipt] = ()
    cursor: str | None = None
    rejected: Sequence[Rejected] = ()


class Channel(Protocol):
    """Two methods are the whole contract; ``check``, ``address_problem``,
    ``send_many`` and ``close`` are optional (see :func:`channel_problems`), and so
    is a ``threads = False`` attribute: the channel never reads ``Outbound.thread``,
    so the outbox does not read the conversation's earlier provider ids for it."""

    name: str

    def send(self, message: Outbound) -> str:
        """Deliver ``message``; return the provider's message id."""
        ...

    def poll(self, cursor: str | None) -> Incoming:
        """What arrived after ``cursor`` (None: from where the channel starts),
        with the position after it. Must not move any position of its own: the
        store keeps it."""
        ...


def channel_problems(channel: Channel, address: str | None = None) -> list[str]:
    """What stops ``channel`` from working (a missing secret, an address it cannot
    reach), asked before a conversation is created and by ``relay doctor``.

    A channel may define ``check() -> list[str]`` and
    ``address_problem(address) -> str | None``; without them nothing is known.
    """
    problems: list[str] = []
    check = getattr(channel, "check", None)
    if callable(check):
        problems.extend(check())
    address_problem = getattr(channel, "address_problem", None)
    if address is not None and callable(address_problem):
        problem = address_problem(address)
        if problem:
            problems.append(problem)
    return problems


def missing_env(name: str, key: str, variable: str | None) -> list[str]:
    """``[problem]`` when the variable a ``*_env`` setting names is unset or empty."""
    import os

    if variable and not os.environ.get(variable):
        return [f"channel {name}: {key} names {variable}, which is not set or empty"]
    return []


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


def _twilio(kind: str) -> ChannelFactory:
    """SMS and WhatsApp are one backend, Twilio's, told which of the two it is."""

    def factory(name: str, settings: Mapping[str, Any]) -> Channel:
        return load_path("relay.channels.twilio:TwilioChannel")(name, kind, settings)

    return factory


#: The channels that ship with relay, named as an entry point names a third-party
#: one; each module is imported only when a channel of that kind is built, so
#: listing or reading instances never pays for smtplib or httpx.
BUILTIN_CHANNELS: dict[str, str | ChannelFactory] = {
    "console": "relay.channels.console:ConsoleChannel.from_settings",
    "webhook": "relay.channels.webhook:WebhookChannel.from_settings",
    "email": "relay.channels.email:EmailChannel.from_settings",
    "sms": _twilio("sms"),
    "whatsapp": _twilio("whatsapp"),
    "telegram": "relay.channels.telegram:TelegramChannel",
}
CHANNELS: Registry[ChannelFactory] = Registry("relay.channels", BUILTIN_CHANNELS, "channel type")


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
