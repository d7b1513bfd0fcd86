"""Plain domain values shared by every layer: todo statuses, message kinds, event
kinds, scopes.

These are frozen and free of any database or framework type, so agents and
channels (which must not see the store) can be written against them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class TodoStatus(StrEnum):
    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    SKIPPED = "skipped"

    def __str__(self) -> str:
        return self.value


class Direction(StrEnum):
    INBOUND = "inbound"
    OUTBOUND = "outbound"

    def __str__(self) -> str:
        return self.value


class Author(StrEnum):
    AGENT = "agent"
    OPERATOR = "operator"
    CONTACT = "contact"
    SYSTEM = "system"

    def __str__(self) -> str:
        return self.value


class MessageStatus(StrEnum):
    """Lifecycle of a transcript row.

    Outbound: queued -> sending -> sent, or failed / blocked (opted out) /
    cancelled (the instance ended before delivery). An agent's message that a
    person approves first starts as a draft: approved it is queued; rejected, or
    replaced by an edited copy (edited), it is never sent. A message left
    ``sending`` by a crash whose channel cannot tell whether it went, and that
    is not safe to send twice, becomes unknown (its fate): it waits for the
    operator (``relay retry`` sends it again). Inbound: received -> processed
    (an agent turn has seen it).
    """

    DRAFT = "draft"
    REJECTED = "rejected"
    EDITED = "edited"

    QUEUED = "queued"
    SENDING = "sending"
    SENT = "sent"
    UNKNOWN = "unknown"
    FAILED = "failed"
    BLOCKED = "blocked"
    CANCELLED = "cancelled"
    RECEIVED = "received"
    PROCESSED = "processed"

    def __str__(self) -> str:
        return self.value


class InboundKind(StrEnum):
    """What an inbound message is, as its channel recognised it.

    Only a ``message`` is a reply: an auto-reply (out of office, vacation) is
    kept in the transcript but never answered and never resets the follow-up
    count, so two auto-responders can never loop; an ``unsubscribe`` (a mail to
    the List-Unsubscribe address, a one-click POST) opts the contact out.
    """

    MESSAGE = "message"
    AUTO_REPLY = "auto_reply"
    UNSUBSCRIBE = "unsubscribe"
    #: An abuse report (ARF, RFC 5965) about our mail to the contact: an opt-out.
    COMPLAINT = "complaint"

    def __str__(self) -> str:
        return self.value


class DeliveryStatus(StrEnum):
    """What a provider reported about an outbound message after it took it.

    ``sent`` and ``delivered`` and ``read`` are progress; ``undelivered``,
    ``failed`` and ``bounced`` mean the contact did not get it.
    """

    SENT = "sent"
    DELIVERED = "delivered"
    #: The receiving server is still trying (a delay warning): not a failure yet.
    DELAYED = "delayed"
    READ = "read"
    UNDELIVERED = "undelivered"
    FAILED = "failed"
    BOUNCED = "bounced"

    @property
    def failed(self) -> bool:
        return self in (DeliveryStatus.UNDELIVERED, DeliveryStatus.FAILED, DeliveryStatus.BOUNCED)

    def __str__(self) -> str:
        return self.value


class EventKind(StrEnum):
    """The kind of a row in the event log (``relay events``; the record is written
    by :mod:`relay.engine.conversation.transitions`)."""

    STATE = "state.changed"
    QUEUED = "message.queued"
    RECEIVED = "message.received"
    SENT = "message.sent"
    FAILED = "message.failed"
    ANSWER = "answer.recorded"
    COMMAND = "command"
    #: A draft written, approved or rejected (``data.action``).
    DRAFT = "draft"
    #: A conversation with a channel ladder moved to another channel (``data.from``,
    #: ``data.to``, ``data.reason``: see relay.engine.conversation.fallback).
    CHANNEL = "channel.changed"

    def __str__(self) -> str:
        return self.value


class Scope(StrEnum):
    APP = "app"
    CONTACT = "contact"
    INSTANCE = "instance"
    TEMP = "temp"


def split_scoped_key(key: str) -> tuple[Scope, str]:
    """Map a state key to its scope: ``app:x`` shared by all, ``contact:x`` by
    every conversation with the contact, ``temp:x`` for one agent turn, and a
    bare key to the one instance."""
    for scope in (Scope.APP, Scope.CONTACT, Scope.TEMP):
        prefix = scope.value + ":"
        if key.startswith(prefix):
            return scope, key
    return Scope.INSTANCE, key


@dataclass(frozen=True)
class Todo:
    id: int
    text: str
    status: TodoStatus = TodoStatus.PENDING
