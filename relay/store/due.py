"""What work is due: the conditions a pulse claims by (:mod:`relay.store.claims`)
and the counts ``relay status`` shows, over the Core tables.

Apart from the claiming module so that ``relay status`` counts due work with the
very conditions the daemon claims by without loading the ORM's classes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from relay.core.states import HEARTBEAT_STATE, PAUSED_STATE
from relay.core.states import TURN_STATES as CORE_TURN_STATES
from relay.core.values import MessageStatus
from relay.store.tables import instances, messages

TURN_STATES = tuple(sorted(state.value for state in CORE_TURN_STATES))
#: Outbox rows not known to be delivered: ``sending`` ones whose sender died
#: included, and those whose fate is ``unknown`` (never due: they wait for the
#: operator, and the conversation's later messages and heartbeat wait with them).
OUTBOX_PENDING = (
    MessageStatus.QUEUED.value, MessageStatus.SENDING.value, MessageStatus.UNKNOWN.value
)  # fmt: skip


def turn_due(now: Any) -> list[Any]:
    return [
        instances.c.state.in_(TURN_STATES),
        or_(instances.c.lease_expires_at.is_(None), instances.c.lease_expires_at <= now),
        or_(instances.c.not_before.is_(None), instances.c.not_before <= now),
    ]


def undelivered(instance_id: Any) -> Any:
    """Outbound of the instance not yet in the contact's hands (queued, sending).

    Asked conversation by conversation, through the conversation's messages
    (``ix_messages_instance_id``): ``OFFSET 0`` keeps PostgreSQL from planning
    it as a join. With the statistics of a quiet outbox (next to no rows
    pending) it picked a join that compares every candidate with every pending
    row, and in a burst thousands are pending: the due-heartbeat claim took
    27 ms with four daemons on 10,000 follow-ups (docs/performance-history.md, eighth
    pass). SQLite asks per conversation anyway.
    """
    pending = messages.alias()
    return (
        select(pending.c.id)
        .where(pending.c.instance_id == instance_id, pending.c.status.in_(OUTBOX_PENDING))
        .offset(0)
        .exists()
    )


def heartbeat_due(cutoff: Any) -> list[Any]:
    """A heartbeat is due when the silence has lasted: never while relay's own
    message has not reached the contact yet (held by a rate limit, retrying), for
    that silence is not the contact's."""
    return [
        instances.c.state == HEARTBEAT_STATE.value,
        instances.c.next_heartbeat_at <= cutoff,
        ~undelivered(instances.c.id),
    ]


def count_due(session: Session, now: datetime, *, due_by: datetime | None = None) -> int:
    """How much work a pulse at ``now`` would find: turns, heartbeats, snoozes and
    deliveries. With ``due_by``, only what was already due by then (overdue work)."""
    cutoff = now if due_by is None else due_by
    waiting_since = func.coalesce(instances.c.not_before, instances.c.updated_at)
    counts = [
        select(func.count()).select_from(instances).where(*turn_due(now), waiting_since <= cutoff),
        select(func.count()).select_from(instances).where(*heartbeat_due(cutoff)),
        select(func.count())
        .select_from(instances)
        .where(instances.c.state == PAUSED_STATE.value, instances.c.paused_until <= cutoff),
        select(func.count())
        .select_from(messages)
        .where(messages.c.status.in_(OUTBOX_PENDING), messages.c.next_attempt_at <= cutoff),
    ]
    return sum(int(session.scalar(query) or 0) for query in counts)
