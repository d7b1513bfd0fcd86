"""What the dispatcher's gate (``relay.engine.gate``) reads before a send: the
contacts, the conversations and the newest inbound of a batch of messages."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from relay.core.values import Direction
from relay.store.among import among
from relay.store.models import Contact, Instance, Message


def contact_facts(session: Session, contact_ids: Collection[int]) -> dict[int, Any]:
    """Whether each contact may be written to, and when (opt-out, bad address, zone)."""
    query = select(
        Contact.id,
        Contact.address,
        Contact.opted_out_at,
        Contact.undeliverable_reason,
        Contact.timezone,
        Contact.last_inbound_at,
    ).where(among(session, Contact.id, contact_ids))
    return {row.id: row for row in session.execute(query)}


def instance_facts(session: Session, instance_ids: Collection[str]) -> dict[str, Any]:
    """Each conversation's state and what its sending window and template need."""
    by_id = select(
        Instance.id,
        Instance.state,
        Instance.previous_state,
        Instance.subject,
        Instance.window,
        Instance.template,
        Instance.first_delivered_at,
    ).where(among(session, Instance.id, instance_ids))
    return {row.id: row for row in session.execute(by_id)}


def last_inbound_ids(session: Session, instance_ids: Collection[str]) -> dict[str, int]:
    """The newest inbound message id per conversation (a proactive message older
    than it is superseded)."""
    inbound = (
        select(Message.instance_id, func.max(Message.id))
        .where(
            among(session, Message.instance_id, instance_ids),
            Message.direction == Direction.INBOUND.value,
        )
        .group_by(Message.instance_id)
    )
    return {str(i): int(n) for i, n in session.execute(inbound)}
