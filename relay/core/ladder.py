"""A conversation's channel ladder: the channels it may use, in order, and when
its next message moves one rung down.

``relay start --channel whatsapp,sms,email`` gives a ladder. The conversation
starts on the first channel that reaches one of the contact's addresses; when a
message is undeliverable there, or when the contact stays silent for
``fallback_after`` after a message went out on it, the next message goes on the
next rung. A ladder only ever moves down: a contact who never answered on
WhatsApp is not written there again after SMS, unless they write there first (a
reply on any rung brings the conversation to that rung: people are answered
where they answer).

Pure: the engine reads the facts (the current channel, when a message first
went out on it, when the contact last wrote) and applies what this module
decides.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from relay.core.errors import InvalidInput


@dataclass(frozen=True)
class Rung:
    """One channel of the ladder and the kind of the contact's address it writes to
    (``phone``, ``email``, ``telegram``; None: the contact's own address)."""

    channel: str
    kind: str | None = None


Ladder = tuple[Rung, ...]


def parse_channels(text: str) -> tuple[str, ...]:
    """``"whatsapp, sms,email"`` as its channel names, in order; one name is a
    ladder of one (today's single channel)."""
    names = tuple(part.strip() for part in text.split(","))
    if any(not name for name in names):
        raise InvalidInput(f"channel list {text!r} has an empty name (write a,b,c)")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise InvalidInput(f"channel list {text!r} names {', '.join(repeated)} twice")
    return names


def resolve(names: Sequence[str], reaches: Iterable[tuple[str, str | None]]) -> Ladder:
    """The ladder of ``names`` the contact can be reached on: ``reaches`` is each
    (channel, address kind) pair that works, in any order; a channel without one
    is left out (the contact has no address of its kind)."""
    found: dict[str, str | None] = {}
    for channel, kind in reaches:
        found.setdefault(channel, kind)
    return tuple(Rung(name, found[name]) for name in names if name in found)


def to_json(ladder: Ladder) -> list[list[str | None]]:
    return [[rung.channel, rung.kind] for rung in ladder]


def from_json(value: Any) -> Ladder:
    """A stored ladder (None or [] for a conversation on one channel: no ladder)."""
    if not value:
        return ()
    return tuple(Rung(str(channel), None if kind is None else str(kind)) for channel, kind in value)


def rung_of(ladder: Ladder, channel: str) -> Rung | None:
    return next((rung for rung in ladder if rung.channel == channel), None)


def next_rung(ladder: Ladder, current: str) -> Rung | None:
    """The rung after ``current``; None at the bottom or off the ladder."""
    names = [rung.channel for rung in ladder]
    if current not in names:
        return None
    at = names.index(current)
    return ladder[at + 1] if at + 1 < len(ladder) else None


def after_failure(ladder: Ladder, current: str, failed_on: str | None) -> Rung | None:
    """Where the next message goes after one on ``failed_on`` could not be
    delivered: the next rung, when the failure is on the current one (a late
    receipt from a rung already left moves nothing); None: nowhere (a person
    takes over, as without a ladder)."""
    if failed_on != current:
        return None
    return next_rung(ladder, current)


def silence_passed(
    went_out_at: datetime | None,
    last_reply_at: datetime | None,
    now: datetime,
    wait: timedelta | None,
) -> bool:
    """Whether the contact has said nothing for ``wait`` since a message first went
    out on the current rung (or since they last wrote, if later). Nothing sent
    there yet, or no wait set: never."""
    if went_out_at is None or wait is None:
        return False
    since = max(went_out_at, last_reply_at) if last_reply_at is not None else went_out_at
    return now - since >= wait


def after_silence(
    ladder: Ladder,
    current: str,
    went_out_at: datetime | None,
    last_reply_at: datetime | None,
    now: datetime,
    wait: timedelta | None,
) -> Rung | None:
    """The rung the next message (a follow-up) moves to because of silence, or None
    to stay."""
    if not silence_passed(went_out_at, last_reply_at, now, wait):
        return None
    return next_rung(ladder, current)


def after_reply(ladder: Ladder, current: str, replied_on: str) -> Rung | None:
    """The rung a reply on ``replied_on`` brings the conversation to (None: stay)."""
    if replied_on == current:
        return None
    return rung_of(ladder, replied_on)


def first_open(
    ladder: Ladder, rung: Rung | None, own_kind: str, closed: Iterable[str]
) -> Rung | None:
    """``rung``, or when the contact opted out of the kind it writes to (``closed``,
    per-channel opt-outs), the first rung below it that is open; None: none is."""
    shut = set(closed)
    while rung is not None and (rung.kind or own_kind) in shut:
        rung = next_rung(ladder, rung.channel)
    return rung


def kind_on(ladder: Ladder, channel: str, own_kind: str) -> str:
    """The kind of the contact's address a message on ``channel`` writes to."""
    rung = rung_of(ladder, channel)
    return rung.kind if rung is not None and rung.kind is not None else own_kind
