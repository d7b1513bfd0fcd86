"""The counts ``relay status`` shows: conversations by state, the outbox, the
unrouted inbound, and the daemons that are pulsing."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from relay.core.values import Direction
from relay.store import queries
from relay.store.models import Instance, Message


def instances_by_state(session: Session) -> dict[str, int]:
    return queries.count_by(session, Instance.state)


def outbound_by_status(session: Session, statuses: Sequence[str]) -> dict[str, int]:
    """Outbound counted by status, for these statuses only (an index range, not
    every message ever sent)."""
    return queries.count_by(
        session,
        Message.status,
        Message.direction == Direction.OUTBOUND.value,
        Message.status.in_(statuses),
    )


def unrouted_count(session: Session) -> int:
    """Inbound that reached no conversation."""
    return int(
        session.scalar(
            select(func.count())
            .select_from(Message)
            .where(Message.instance_id.is_(None), Message.direction == Direction.INBOUND.value)
        )
        or 0
    )
