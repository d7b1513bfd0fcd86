"""What a bounce does to its contact: dead addresses are marked, soft bounces counted.

A bounce whose reason means the address is dead (user or host unknown, see
:mod:`relay.core.bounce_reasons`) marks the contact undeliverable at once. Any
other bounce (mailbox full, a spam or policy block, a rate limit...) fails
only its message and tells the conversation; but when such bounces keep
coming (``[bounces] soft_limit`` within ``soft_window``) the address is marked
too, so that relay stops knocking on a door that stays shut. The mark keeps
the reason and the message of the bounce that set it, for ``relay contact
show``; ``relay contact deliverable`` clears it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from relay.core.values import Direction
from relay.store.models import Contact, Message


@dataclass(frozen=True)
class SoftBounces:
    """``[bounces]``: this many soft bounces within ``window`` mark the address (0: never)."""

    limit: int = 3
    window: timedelta = timedelta(days=30)


DEFAULT_SOFT_BOUNCES = SoftBounces()


def soft_bounces(session: Session, contact_id: int, since: datetime) -> int:
    """How many of the contact's outbound messages bounced (with a reason) since ``since``."""
    query = select(func.count(Message.id)).where(
        Message.contact_id == contact_id,
        Message.direction == Direction.OUTBOUND.value,
        Message.bounce_reason.is_not(None),
        Message.delivery_updated_at >= since,
    )
    return int(session.execute(query).scalar_one())


def escalation(
    session: Session, person: Contact, reason: str | None, now: datetime, policy: SoftBounces
) -> str | None:
    """The undeliverable reason when soft bounces have piled up, else None."""
    if policy.limit <= 0 or reason is None:
        return None
    session.flush()
    count = soft_bounces(session, person.id, now - policy.window)
    if count < policy.limit:
        return None
    days = policy.window.total_seconds() / 86400
    return f"{count} bounces within {days:g} days (last: {reason})"
