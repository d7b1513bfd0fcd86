"""How often a contact's mail bounced lately (for the soft-bounce escalation)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from relay.store.models import Message


def bounced_since(session: Session, contact_id: int, since: datetime) -> int:
    """How many of the contact's outbound messages bounced (with a reason) since ``since``."""
    query = select(func.count(Message.id)).where(
        Message.contact_id == contact_id,
        Message.direction == "outbound",
        Message.bounce_reason.is_not(None),
        Message.delivery_updated_at >= since,
    )
    return int(session.execute(query).scalar_one())
