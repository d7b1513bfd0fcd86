"""The funnel's SQL (``relay stats``) and the writes that keep its facts.

Every figure is read from ``instances`` alone, from covering indexes (see
``ix_instances_funnel`` and ``REPLY_INDEXES`` in the models): one
scan of the chosen range grouped in index order gives started, delivered,
replied, follow-ups and each outcome; the median time to first reply is the
middle row of an ordered index range (``percentile_cont`` on PostgreSQL). Only
the failed deliveries come from ``messages``, through its (direction, status)
index: their reasons live there.

The facts are written where they happen, in the transaction that makes them
true: the outcome by the transition that decides it
(:mod:`relay.engine.conversation.transitions`), the first delivery when the outbox records
a send (:func:`record_first_deliveries`, one statement per delivery group and
only for conversations not delivered to before), the first reply when it is
stored (:func:`note_reply`), a follow-up with its transition.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, bindparam, func, select, update
from sqlalchemy.orm import Session

from relay.core.outcomes import OUTCOMES, reply_delay
from relay.core.values import Direction, MessageStatus, TodoStatus
from relay.store.models import Instance, Message, Todo, table_of

_OPEN = (TodoStatus.PENDING.value, TodoStatus.IN_PROGRESS.value)


# -- writes ------------------------------------------------------------------------------------


def answers_missing(session: Session, instance_id: str) -> bool:
    """Whether a required todo of the instance is still open (asked once, when it
    completes; the session's pending todo changes are flushed first)."""
    open_todo = select(Todo.position).where(
        Todo.instance_id == instance_id, Todo.required == 1, Todo.status.in_(_OPEN)
    )
    return session.scalar(select(open_todo.exists())) or False


def record_first_deliveries(session: Session, firsts: Mapping[str, datetime]) -> None:
    """``first_delivered_at`` of conversations whose first message was just sent:
    one executemany UPDATE, a no-op for any that another group got to first."""
    if not firsts:
        return
    table = table_of(Instance)
    session.execute(
        update(table)
        .where(table.c.id == bindparam("iid"), table.c.first_delivered_at.is_(None))
        .values(first_delivered_at=bindparam("at")),
        [{"iid": iid, "at": at} for iid, at in firsts.items()],
    )


def note_reply(instance: Instance, at: datetime) -> None:
    """A reply from the contact was stored on ``instance``: the first one is a fact."""
    if instance.first_reply_at is None:
        instance.first_reply_at = at
        instance.reply_seconds = reply_delay(instance.first_delivered_at, at)


def forget_delivery(session: Session, instance: Instance) -> None:
    """A sent message bounced: the first delivery is the first one still standing."""
    instance.first_delivered_at = session.scalar(
        select(func.min(Message.sent_at)).where(
            Message.instance_id == instance.id,
            Message.direction == Direction.OUTBOUND.value,
            Message.status == MessageStatus.SENT.value,
        )
    )
    instance.reply_seconds = reply_delay(instance.first_delivered_at, instance.first_reply_at)


# -- reads -------------------------------------------------------------------------------------


def _chosen(campaign: str | None, since: datetime | None) -> list[ColumnElement[bool]]:
    where: list[ColumnElement[bool]] = []
    if campaign:
        where.append(Instance.campaign == campaign)
    if since is not None:
        where.append(Instance.created_at >= since)
    return where


def funnel(session: Session, *, campaign: str | None, since: datetime | None) -> dict[str, int]:
    """started, delivered, replied, followups and each outcome's count: one
    statement, grouped by (campaign, outcome) in the index's order."""
    query = (
        select(
            Instance.outcome,
            func.count(),
            func.count(Instance.first_delivered_at),
            func.count(Instance.first_reply_at),
            func.coalesce(func.sum(Instance.followups_sent), 0),
        )
        .where(*_chosen(campaign, since))
        .group_by(Instance.campaign, Instance.outcome)
    )
    counts = dict.fromkeys(("started", "delivered", "replied", "followups", *OUTCOMES), 0)
    for outcome, started, delivered, replied, followups in session.execute(query):
        for key, value in zip(
            ("started", "delivered", "replied", "followups", outcome or "live"),
            (started, delivered, replied, followups, started),
            strict=True,
        ):
            counts[key] += int(value)
    return counts


def median_first_reply(
    session: Session, *, campaign: str | None, since: datetime | None
) -> float | None:
    """Median seconds from the first delivery to the first reply, in the database:
    ``percentile_cont`` on PostgreSQL; on SQLite the count, then the middle row(s)
    of the reply_seconds index (LIMIT/OFFSET over the index, no sort)."""
    where = and_(Instance.reply_seconds.is_not(None), *_chosen(campaign, since))
    if session.get_bind().dialect.name == "postgresql":
        median = session.scalar(
            select(func.percentile_cont(0.5).within_group(Instance.reply_seconds)).where(where)
        )
        return None if median is None else float(median)
    count = session.scalar(select(func.count(Instance.reply_seconds)).where(where))
    if not count:
        return None
    middle: Sequence[Any] = session.execute(
        select(Instance.reply_seconds)
        .where(where)
        .order_by(Instance.reply_seconds)
        .limit(2 - count % 2)
        .offset((count - 1) // 2)
    ).all()
    return sum(float(row[0]) for row in middle) / len(middle)


def failed_deliveries(
    session: Session, *, campaign: str | None, since: datetime | None, limit: int = 10
) -> list[tuple[str, int]]:
    """Outbound messages that failed for good, counted by their last error (the
    (direction, status) index finds them; only the failed rows are read)."""
    reason = func.coalesce(Message.last_error, "unknown").label("reason")
    count = func.count().label("count")
    query = select(reason, count).where(
        Message.direction == Direction.OUTBOUND.value,
        Message.status == MessageStatus.FAILED.value,
    )
    if campaign or since is not None:
        # Driven from the failed rows, each joined to its instance by id.
        query = query.join(Instance, Instance.id == Message.instance_id)
        query = query.where(*_chosen(campaign, since))
    else:
        query = query.where(Message.instance_id.is_not(None))
    query = query.group_by(reason).order_by(count.desc(), reason).limit(limit)
    return [(str(r), int(c)) for r, c in session.execute(query).all()]


def replies_by_intent(
    session: Session, *, campaign: str | None, since: datetime | None
) -> dict[str, int]:
    """Replies counted by the ``[intent]`` classifier's label: only the labelled rows
    are read (the partial index ``ix_messages_intent``), each joined to its
    conversation when a campaign or a start is chosen."""
    count = func.count().label("count")
    query = select(Message.intent, count).where(Message.intent.is_not(None))
    if campaign or since is not None:
        query = query.join(Instance, Instance.id == Message.instance_id)
        query = query.where(*_chosen(campaign, since))
    query = query.group_by(Message.intent)
    return {str(label): int(n) for label, n in session.execute(query).all()}
