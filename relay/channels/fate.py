"""What became of a message handed to a channel when relay crashed before it
recorded the answer: the channel's part of "no second message to a person".

A dispatcher marks a message ``sending`` (committed) before it hands it to a
channel, and records the provider's answer afterwards. A crash in between
leaves the message ``sending``, and relay cannot know whether the provider took
it. Sending it again blindly can reach a person twice, so the outbox asks the
channel first, through two small, optional capabilities:

- ``reconcile(message, since, taken) -> Reconciled``: ask the provider (Twilio's
  message list for the recipient, the IMAP sent folder by ``Message-ID``)
  whether it took ``message`` at or after ``since``; :data:`Fate.UNKNOWN`
  when it cannot tell (the provider unreachable, no sent folder configured).
  ``taken`` holds the provider ids relay recorded for its other messages to that
  recipient: a provider asked by recipient and text lists those too, and one
  with the same text is not this message. (A channel whose ``reconcile`` takes
  only ``message`` and ``since`` is asked without it.)
- ``resend_safe = True``: sending again under the same idempotency key never
  reaches the recipient twice (the console channel looks the key up under a
  lock; a webhook receiver de-duplicates by its ``Idempotency-Key``).

A channel with neither leaves such a message's fate unknown: it waits for the
operator (``relay doctor`` lists it, ``relay retry`` sends it again).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Protocol

from relay.channels.base import Channel, ChannelError, Outbound


class Fate(StrEnum):
    SENT = "sent"
    NOT_SENT = "not-sent"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Reconciled:
    fate: Fate
    #: The provider's id of the message found (SENT).
    provider_id: str | None = None
    #: Why the fate is unknown, for the operator.
    detail: str = ""


class Reconciling(Channel, Protocol):
    """A channel that can ask its provider whether a message went (optional)."""

    def reconcile(
        self, message: Outbound, since: datetime, taken: frozenset[str] = frozenset()
    ) -> Reconciled: ...


def reconcile(
    channel: Channel, message: Outbound, since: datetime, taken: frozenset[str] = frozenset()
) -> Reconciled:
    """The channel's answer for ``message`` handed over at or after ``since``: sent,
    not sent, or unknown (the channel cannot ask, or asking failed). ``taken``:
    provider ids that are other messages', never this one's."""
    ask = getattr(channel, "reconcile", None)
    if not callable(ask):
        return Reconciled(Fate.UNKNOWN, detail=f"channel {channel.name} cannot ask its provider")
    try:
        answer = ask(message, since, taken) if _takes_taken(ask) else ask(message, since)
    except ChannelError as exc:
        return Reconciled(Fate.UNKNOWN, detail=f"asking the provider failed: {exc.message}")
    except Exception as exc:  # a broken provider must not stop the outbox
        detail = " ".join(str(exc).split()) or type(exc).__name__
        return Reconciled(Fate.UNKNOWN, detail=f"asking the provider failed: {detail}")
    if not isinstance(answer, Reconciled):
        raise TypeError(f"channel {channel.name}: reconcile returned {answer!r}")
    return answer


def _takes_taken(ask: object) -> bool:
    """Whether a channel's ``reconcile`` takes ``taken`` (channels written before it
    was added take two arguments)."""
    try:
        return "taken" in inspect.signature(ask).parameters  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def resend_safe(channel: Channel) -> bool:
    """Whether the channel declares that a second hand-over under the same
    idempotency key never reaches the recipient twice."""
    return getattr(channel, "resend_safe", False) is True
