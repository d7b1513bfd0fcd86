"""What ``/metrics`` reports, read from the store at scrape time, so that every
``relay serve`` on one store reports the same numbers whichever daemon did the
work. Each function is one statement; the message counts are one grouped scan
of the outbound messages (retention prunes old ones: see docs/operations.md).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from relay.core.states import HEARTBEAT_STATE, Event
from relay.core.values import DeliveryStatus, Direction, InboundKind, MessageStatus
from relay.store.tables import TIME, events, instances, messages

#: How many of the latest rows of the record the agent-turn figures look back over
#: (about half of them state changes, the rest messages' events).
TURN_WINDOW = 10_000


def outbound_by_channel(session: Session) -> list[tuple[str, bool, str, str | None, int]]:
    """(channel, taken, status, delivery_status, count) of every outbound message;
    ``taken``: a channel took it (it has a send time, whatever came of it later)."""
    taken = messages.c.sent_at.is_not(None)
    rows = session.execute(
        select(
            messages.c.channel, taken, messages.c.status, messages.c.delivery_status, func.count()
        )
        .where(messages.c.direction == Direction.OUTBOUND.value)
        .group_by(messages.c.channel, taken, messages.c.status, messages.c.delivery_status)
    )
    return [(str(ch or ""), bool(tk), str(st), ds, int(n)) for ch, tk, st, ds, n in rows]


def message_counts(session: Session) -> dict[str, dict[str, int]]:
    """Per kind, the count by channel: sent (a channel took it), delivered (or read),
    failed (for good, or reported undelivered), bounced (reported bounced)."""
    counts: dict[str, dict[str, int]] = {k: {} for k in ("sent", "delivered", "failed", "bounced")}

    def add(kind: str, channel: str, n: int) -> None:
        counts[kind][channel] = counts[kind].get(channel, 0) + n

    failures = {DeliveryStatus.UNDELIVERED.value, DeliveryStatus.FAILED.value}
    bounced = DeliveryStatus.BOUNCED.value
    for channel, taken, status, delivery, n in outbound_by_channel(session):
        if taken:
            add("sent", channel, n)
        if delivery != bounced and (status == MessageStatus.FAILED.value or delivery in failures):
            add("failed", channel, n)
        if delivery in (DeliveryStatus.DELIVERED.value, DeliveryStatus.READ.value):
            add("delivered", channel, n)
        if delivery == bounced:
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
            instances.c.state == HEARTBEAT_STATE.value,
            instances.c.next_heartbeat_at <= now,
        )
    )


def recent_turn_seconds(session: Session) -> list[float]:
    """Seconds from a turn becoming due (the reply stored, the conversation
    created) to the agent's turn committed, for the turns among the latest
    :data:`TURN_WINDOW` rows of the record (newest first by id; the id index)."""
    top = int(session.scalar(select(func.max(events.c.id))) or 0)
    before = (
        func.lag(events.c.created_at, type_=TIME)
        .over(partition_by=events.c.instance_id, order_by=events.c.id)
        .label("due_at")
    )
    recent = (
        select(events.c.event, events.c.created_at, before)
        .where(events.c.id > top - TURN_WINDOW, events.c.to_state.is_not(None))
        .subquery()
    )
    turns = (Event.AGENT_PROCESSES_REPLY.value, Event.AGENT_SENDS_FIRST_MESSAGE.value)
    rows = session.execute(
        select(recent.c.created_at, recent.c.due_at).where(
            recent.c.event.in_(turns), recent.c.due_at.is_not(None)
        )
    )
    return [max(0.0, (done - due).total_seconds()) for done, due in rows]
