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

from sqlalchemy.orm import Session

from relay.channels.base import Receipt
from relay.core.values import MessageStatus
from relay.store import bounce_counts, contact_work
from relay.store.models import Contact, Message


@dataclass(frozen=True)
class SoftBounces:
    """``[bounces]``: this many soft bounces within ``window`` mark the address (0: never)."""

    limit: int = 3
    window: timedelta = timedelta(days=30)


DEFAULT_SOFT_BOUNCES = SoftBounces()


def record_bounce(
    session: Session,
    person: Contact,
    message: Message,
    receipt: Receipt,
    reason: str,
    now: datetime,
    policy: SoftBounces,
) -> None:
    """Keep the bounce's reason on its message; mark the contact when the address is
    dead or soft bounces have piled up (``reason``: the failure as the operator reads it)."""
    message.bounce_reason = receipt.reason
    repeated = None if receipt.permanent else escalation(session, person, receipt.reason, now,
                                                          policy)  # fmt: skip
    if receipt.permanent or repeated:
        mark_undeliverable(
            session,
            person,
            repeated or reason,
            now,
            bounce_reason=receipt.reason,
            message_id=message.id,
        )


def escalation(
    session: Session, person: Contact, reason: str | None, now: datetime, policy: SoftBounces
) -> str | None:
    """The undeliverable reason when soft bounces have piled up, else None."""
    if policy.limit <= 0 or reason is None:
        return None
    session.flush()
    count = bounce_counts.bounced_since(session, person.id, now - policy.window)
    if count < policy.limit:
        return None
    days = policy.window.total_seconds() / 86400
    return f"{count} bounces within {days:g} days (last: {reason})"


def mark_undeliverable(
    session: Session,
    person: Contact,
    reason: str,
    now: datetime,
    *,
    bounce_reason: str | None = None,
    message_id: int | None = None,
) -> None:
    """The address will never work: hold what is queued for it, refuse new conversations.
    ``bounce_reason`` and ``message_id``: the bounce that said so (``relay contact show``)."""
    if person.undeliverable_at is None:
        person.undeliverable_at = now
        person.undeliverable_reason = reason
        person.bounce_reason = bounce_reason
        person.undeliverable_message_id = message_id
        person.updated_at = now
    for queued in contact_work.queued_outbound_to(session, person.id):
        queued.status = MessageStatus.FAILED.value
        queued.last_error = f"address undeliverable: {reason}"
        queued.next_attempt_at = None
