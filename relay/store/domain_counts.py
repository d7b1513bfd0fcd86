"""Deliveries to a group of recipient domains: what a per-domain throttle counts.

Mail providers throttle a sender by how much it sends to their own domains
(``gmail.com`` and ``googlemail.com`` are one provider), so the outbox counts
what one channel delivered to those domains in the last period, from the
store's sent timestamps: the count holds across restarts and across daemons.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from relay.core.values import MessageStatus
from relay.store.tables import contacts, messages


def sent_to_domains_since(
    session: Session, channel: str, domains: Sequence[str], since: datetime
) -> tuple[int, datetime | None]:
    """Deliveries on ``channel`` to an address at one of ``domains`` after ``since``,
    and the oldest of them (the window is half-open, as :func:`claims.sent_since`'s)."""
    at = or_(*(contacts.c.address.like(f"%@{d}", escape="\\") for d in domains))
    count, oldest = session.execute(
        select(func.count(), func.min(messages.c.sent_at))
        .select_from(messages.join(contacts, contacts.c.id == messages.c.contact_id))
        .where(
            messages.c.channel == channel,
            messages.c.status == MessageStatus.SENT.value,
            messages.c.sent_at > since,
            at,
        )
    ).one()
    return int(count or 0), oldest
