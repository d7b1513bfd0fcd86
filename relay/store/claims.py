"""Claiming due work: the only place that knows how claiming works on each database.

On PostgreSQL due rows are locked with ``FOR UPDATE SKIP LOCKED``, so several
daemons take disjoint batches; a claim writes a lease (owner and expiry) and
commits, and work whose lease expired (its process died) is claimed again.
On SQLite every transaction is a write transaction (``BEGIN IMMEDIATE``), which
serialises claimers on the file lock.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Select, func, or_, select
from sqlalchemy.orm import Session

from relay.core.states import State
from relay.core.values import MessageStatus
from relay.store.models import Instance, Message

TURN_STATES = (
    State.CREATED.value,
    State.ACTIVE.value,
    State.WAITING_FOR_AGENT.value,
    State.HEARTBEAT_SCHEDULED.value,
)
#: Outbox rows still to be delivered (``sending`` ones whose sender died included).
OUTBOX_PENDING = (MessageStatus.QUEUED.value, MessageStatus.SENDING.value)


def _skip_locked(session: Session, query: Select[Any]) -> Select[Any]:
    if session.get_bind().dialect.name == "postgresql":
        return query.with_for_update(skip_locked=True)
    return query


def _turn_due(now: datetime) -> list[Any]:
    return [
        Instance.state.in_(TURN_STATES),
        or_(Instance.lease_expires_at.is_(None), Instance.lease_expires_at <= now),
        or_(Instance.not_before.is_(None), Instance.not_before <= now),
    ]


def claim_turns(
    session: Session,
    now: datetime,
    owner: str,
    lease: timedelta,
    limit: int,
    *,
    instance_id: str | None = None,
) -> list[tuple[str, int]]:
    """Lease up to ``limit`` instances whose turn is due; returns (id, version) pairs.

    The version is what the turn's commit compares against: any change to the
    instance meanwhile (pause, cancel, another event) discards the turn.
    """
    query = select(Instance).where(*_turn_due(now))
    if instance_id is not None:
        query = query.where(Instance.id == instance_id)
    query = query.order_by(Instance.updated_at, Instance.seq).limit(limit)
    claimed = []
    for instance in session.scalars(_skip_locked(session, query)).all():
        instance.lease_owner = owner
        instance.lease_expires_at = now + lease
        instance.turn_attempts += 1
        claimed.append((instance.id, instance.version))
    return claimed


def lock_instance(session: Session, instance_id: str) -> Instance | None:
    return session.scalar(select(Instance).where(Instance.id == instance_id).with_for_update())


def lock_instances(session: Session, instance_ids: list[str]) -> dict[str, Instance]:
    """Lock several instances, in id order (two lockers never wait on each other in a circle)."""
    query = (
        select(Instance)
        .where(Instance.id.in_(instance_ids))
        .order_by(Instance.id)
        .with_for_update()
    )
    return {instance.id: instance for instance in session.scalars(query)}


def lock_message(session: Session, message_id: int) -> Message | None:
    return session.scalar(select(Message).where(Message.id == message_id).with_for_update())


def lock_messages(session: Session, message_ids: list[int]) -> dict[int, Message]:
    """Lock several outbox rows, in id order."""
    query = (
        select(Message).where(Message.id.in_(message_ids)).order_by(Message.id).with_for_update()
    )
    return {message.id: message for message in session.scalars(query)}


def due_heartbeats(session: Session, now: datetime, limit: int) -> list[Instance]:
    """Instances waiting for a reply whose heartbeat is due, earliest first, locked."""
    query = (
        select(Instance)
        .where(
            Instance.state == State.WAITING_FOR_REPLY.value,
            Instance.next_heartbeat_at <= now,
        )
        .order_by(Instance.next_heartbeat_at, Instance.seq)
        .limit(limit)
    )
    return list(session.scalars(_skip_locked(session, query)).all())


def due_snoozes(session: Session, now: datetime, limit: int) -> list[Instance]:
    query = (
        select(Instance)
        .where(Instance.state == State.PAUSED.value, Instance.paused_until <= now)
        .order_by(Instance.paused_until)
        .limit(limit)
    )
    return list(session.scalars(_skip_locked(session, query)).all())


def claim_outbox(
    session: Session,
    now: datetime,
    lease: timedelta,
    limit: int,
    *,
    message_id: int | None = None,
    instance_id: str | None = None,
) -> list[Message]:
    """Lease due outbound messages: ``queued`` ones whose time has come, and
    ``sending`` ones whose sender died (their lease ran out). Each is marked
    ``sending`` with one more attempt before the channel is called."""
    query = select(Message).where(
        Message.status.in_(OUTBOX_PENDING),
        Message.next_attempt_at <= now,
    )
    if message_id is not None:
        query = query.where(Message.id == message_id)
    if instance_id is not None:
        query = query.where(Message.instance_id == instance_id)
    query = query.order_by(Message.next_attempt_at, Message.id).limit(limit)
    rows = list(session.scalars(_skip_locked(session, query)).all())
    for message in rows:
        message.status = MessageStatus.SENDING.value
        message.attempts += 1
        message.next_attempt_at = now + lease
    return rows


def sent_since(session: Session, channel: str, since: datetime) -> tuple[int, datetime | None]:
    """Deliveries on ``channel`` after ``since``, and the oldest of them (for rate limits).

    The window is half-open: a message sent exactly one period ago no longer
    counts, so a delivery held until "oldest + period" fits at that instant.
    """
    count, oldest = session.execute(
        select(func.count(), func.min(Message.sent_at)).where(
            Message.channel == channel,
            Message.status == MessageStatus.SENT.value,
            Message.sent_at > since,
        )
    ).one()
    return int(count or 0), oldest


def next_due(session: Session, now: datetime) -> datetime | None:
    """The earliest moment any work falls due (for bringing the daemon's pulse forward)."""
    candidates = [
        session.scalar(
            select(func.min(Instance.next_heartbeat_at)).where(
                Instance.state == State.WAITING_FOR_REPLY.value
            )
        ),
        session.scalar(
            select(func.min(Message.next_attempt_at)).where(Message.status.in_(OUTBOX_PENDING))
        ),
        session.scalar(
            select(func.min(Instance.paused_until)).where(Instance.state == State.PAUSED.value)
        ),
        # Turns not leased (or whose lease ran out), including first messages
        # held for the sending window (due at ``not_before``).
        session.scalar(
            select(func.min(func.coalesce(Instance.not_before, Instance.updated_at))).where(
                Instance.state.in_(TURN_STATES),
                or_(Instance.lease_expires_at.is_(None), Instance.lease_expires_at <= now),
            )
        ),
    ]
    found = [c for c in candidates if c is not None]
    return min(found) if found else None


def count_due(session: Session, now: datetime, *, due_by: datetime | None = None) -> int:
    """How much work a pulse at ``now`` would find: turns, heartbeats, snoozes and
    deliveries. With ``due_by``, only what was already due by then (overdue work)."""
    cutoff = now if due_by is None else due_by
    counts = [
        select(func.count())
        .select_from(Instance)
        .where(*_turn_due(now), func.coalesce(Instance.not_before, Instance.updated_at) <= cutoff),
        select(func.count())
        .select_from(Instance)
        .where(
            Instance.state == State.WAITING_FOR_REPLY.value, Instance.next_heartbeat_at <= cutoff
        ),
        select(func.count())
        .select_from(Instance)
        .where(Instance.state == State.PAUSED.value, Instance.paused_until <= cutoff),
        select(func.count())
        .select_from(Message)
        .where(
            Message.status.in_(OUTBOX_PENDING),
            Message.next_attempt_at <= cutoff,
        ),
    ]
    return sum(int(session.scalar(query) or 0) for query in counts)
