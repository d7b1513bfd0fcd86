"""What ``/metrics`` reports, read from the store at scrape time, so that every
``relay serve`` on one store reports the same numbers whichever daemon did the
work. Each function is one statement; the message counts are one grouped scan
of the outbound messages (retention prunes old ones: see docs/operations.md).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session

from relay.core.states import Event, State
from relay.core.values import DeliveryStatus, Direction, InboundKind, MessageStatus
from relay.store.tables import instances, messages, transitions

#: How many of the latest state changes the agent-turn figures look back over.
TURN_WINDOW = 5000


def outbound_by_channel(session: Session) -> list[tuple[str, str, str | None, int]]:
    """(channel, status, delivery_status, count) of every outbound message."""
    rows = session.execute(
        select(messages.c.channel, messages.c.status, messages.c.delivery_status, func.count())
        .where(messages.c.direction == Direction.OUTBOUND.value)
        .group_by(messages.c.channel, messages.c.status, messages.c.delivery_status)
    )
    return [(str(ch or ""), str(st), ds, int(n)) for ch, st, ds, n in rows]


def message_counts(session: Session) -> dict[str, dict[str, int]]:
    """Per kind (sent, delivered, failed, bounced), the count by channel."""
    counts: dict[str, dict[str, int]] = {k: {} for k in ("sent", "delivered", "failed", "bounced")}

    def add(kind: str, channel: str, n: int) -> None:
        counts[kind][channel] = counts[kind].get(channel, 0) + n

    failures = {DeliveryStatus.UNDELIVERED.value, DeliveryStatus.FAILED.value}
    for channel, status, delivery, n in outbound_by_channel(session):
        if status == MessageStatus.SENT.value:
            add("sent", channel, n)
        if status == MessageStatus.FAILED.value or delivery in failures:
            add("failed", channel, n)
        if delivery in (DeliveryStatus.DELIVERED.value, DeliveryStatus.READ.value):
            add("delivered", channel, n)
        if delivery == DeliveryStatus.BOUNCED.value:
            add("bounced", channel, n)
    return counts


def replies_by_channel(session: Session) -> dict[str, int]:
    """Contacts' messages (not auto-replies or unsubscribes) that reached a conversation."""
    rows = session.execute(
        select(messages.c.channel, func.count())
        .where(
            messages.c.direction == Direction.INBOUND.value,
            messages.c.kind == InboundKind.MESSAGE.value,
            messages.c.instance_id.is_not(None),
        )
        .group_by(messages.c.channel)
    )
    return {str(channel or ""): int(n) for channel, n in rows}


def followups_sent(session: Session) -> int:
    return int(session.scalar(select(func.coalesce(func.sum(instances.c.followups_sent), 0))) or 0)


def oldest_due_heartbeat(session: Session, now: datetime) -> datetime | None:
    """The earliest heartbeat that is due and has not fired (the due-heartbeat index)."""
    return session.scalar(
        select(func.min(instances.c.next_heartbeat_at)).where(
            instances.c.state == State.WAITING_FOR_REPLY.value,
            instances.c.next_heartbeat_at <= now,
        )
    )


def recent_turn_seconds(session: Session) -> list[float]:
    """Seconds from a turn becoming due (the reply stored, the conversation
    created) to the agent's turn committed, for the turns among the latest
    :data:`TURN_WINDOW` state changes (newest first by id; the id index)."""
    top = session.scalar(select(func.max(transitions.c.id))) or 0
    later = transitions.alias("turn")
    earlier = transitions.alias("before")
    previous = (
        select(func.max(earlier.c.id))
        .where(earlier.c.instance_id == later.c.instance_id, earlier.c.id < later.c.id)
        .scalar_subquery()
    )
    rows = session.execute(
        select(later.c.created_at, earlier.c.created_at)
        .join(earlier, and_(earlier.c.id == previous))
        .where(
            later.c.id > int(top) - TURN_WINDOW,
            later.c.event.in_(
                [Event.AGENT_PROCESSES_REPLY.value, Event.AGENT_SENDS_FIRST_MESSAGE.value]
            ),
        )
    )
    return [max(0.0, (done - due).total_seconds()) for done, due in rows]
