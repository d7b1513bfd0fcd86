"""What a conversation does next, as a value: a program reads its fields, people read
:func:`describe`.

:mod:`relay.engine.conversation.forecast` works the value out from the store; ``relay show``
prints its words and ``--json`` carries both (``next`` and ``next_message``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from relay.core.clock import isoformat, readable
from relay.core.durations import format_duration

RUNNER = "the daemon or `relay tick` runs it"


class Next(StrEnum):
    """What comes next."""

    FIRST_MESSAGE = "first_message"
    FOLLOW_UP = "follow_up"
    REPLY = "reply"
    #: An outbox message on its way (see :class:`Delivery`).
    DELIVERY = "delivery"
    #: The last follow-up was sent: silence until ``at`` abandons the conversation.
    ABANDON = "abandon"
    AWAIT_REPLY = "await_reply"
    #: Queued behind the contact's live conversation (``detail``: its id).
    QUEUED = "queued"
    PAUSED = "paused"
    #: Waits for a person (``detail``: why it was handed over).
    PERSON = "person"
    #: A draft of the agent's waits for a person's approval (``detail``: how many).
    APPROVAL = "approval"


class Delivery(StrEnum):
    """Where an outbox message on its way stands."""

    SENDING = "sending"
    #: The channel cannot send at all (bad credentials); kept queued, retried at ``until``.
    KEPT = "kept"
    RETRY = "retry"
    RATE_LIMITED = "rate_limited"
    READY = "ready"


@dataclass(frozen=True)
class Forecast:
    """``at``: when it falls due; ``until``: when a sending window, rate limit, retry
    or snooze lets it go; ``due``: it is due now (a runner takes it on its next pass)."""

    next: Next
    at: datetime | None = None
    until: datetime | None = None
    due: bool = False
    #: A follow-up's number, "2/5".
    number: str | None = None
    delivery: Delivery | None = None
    channel: str | None = None
    attempt: int | None = None
    #: A follow-up due when the contact's sending window opens.
    at_window_open: bool = False
    #: The countdown a pause keeps, in seconds.
    remaining_seconds: int | None = None
    #: An error, the reason a person was asked, or the conversation queued ahead.
    detail: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "next": self.next.value,
            "at": isoformat(self.at),
            "until": isoformat(self.until),
            "due": self.due,
            "number": self.number,
            "delivery": self.delivery.value if self.delivery else None,
            "channel": self.channel,
            "attempt": self.attempt,
            "remaining_seconds": self.remaining_seconds,
            "detail": self.detail,
        }


def describe(forecast: Forecast) -> str:
    """One line for people."""
    words = _WORDS[forecast.next](forecast)
    return f"{words} ({RUNNER})" if forecast.due else words


def _first_message(f: Forecast) -> str:
    if f.until is not None:
        return f"first message held for the sending window until {_at(f.until)}"
    return "first message due now"


def _follow_up(f: Forecast) -> str:
    what = f"follow-up {f.number}"
    if f.at is None:
        return f"{what} due now"
    if f.due:
        return f"{what} due since {_at(f.at)}"
    if f.until is not None:
        return f"{what} due {_at(f.at)}, held for the sending window until {_at(f.until)}"
    if f.at_window_open:
        return f"{what} at {_at(f.at)}, when the sending window opens"
    return f"{what} at {_at(f.at)}"


def _delivery(f: Forecast) -> str:
    if f.delivery is Delivery.SENDING:
        return f"being delivered on {f.channel} (attempt {f.attempt})"
    if f.delivery is Delivery.KEPT:
        return f"kept queued: {f.detail} (next try at {_at(f.until)})"
    if f.delivery is Delivery.RETRY:
        retry = f"retry at {_at(f.until)}" if f.until is not None else "retry now"
        return f"waiting for delivery (attempt {f.attempt}, {retry})"
    if f.delivery is Delivery.RATE_LIMITED:
        return f"held by the rate limit of channel {f.channel} until {_at(f.until)}"
    return f"queued for delivery on {f.channel} now"


def _paused(f: Forecast) -> str:
    left = f.remaining_seconds
    then = (
        f"; the follow-up countdown resumes with {format_duration(timedelta(seconds=left))} left"
        if left is not None
        else ""
    )
    if f.until is not None:
        return f"paused until {_at(f.until)} (snooze){then}"
    return f"paused: nothing is sent until `relay resume`{then}"


def _queued(f: Forecast) -> str:
    behind = f" {f.detail}" if f.detail else ""
    return f"waits until the contact's live conversation{behind} ends"


def _person(f: Forecast) -> str:
    why = f" ({f.detail})" if f.detail else ""
    return f"waits for a person: `relay send` or `relay resume`{why}"


_WORDS = {
    Next.FIRST_MESSAGE: _first_message,
    Next.FOLLOW_UP: _follow_up,
    Next.REPLY: lambda f: "reply due now",
    Next.DELIVERY: _delivery,
    Next.ABANDON: lambda f: f"none: abandons at {_at(f.at)} unless the contact replies",
    Next.AWAIT_REPLY: lambda f: "waits for the contact's reply",
    Next.QUEUED: _queued,
    Next.PAUSED: _paused,
    Next.PERSON: _person,
    Next.APPROVAL: lambda f: f"{f.detail} draft(s) await approval (`relay drafts`)",
}


def _at(moment: datetime | None) -> str:
    if moment is None:
        return "-"
    return readable(moment)
