"""The funnel's SQL: every figure of ``relay stats`` is an aggregate computed by
the database (a handful of statements, whatever the number of conversations;
no row of an instance is brought into Python).

Outcomes are exclusive, decided by one CASE per instance: opted out (the
contact asked to hear nothing more), completed (every todo completed or
skipped), ended early (completed with todos still open), abandoned, failed,
waiting on a human, or still live.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, case, func, select
from sqlalchemy.orm import Session, aliased

from relay.core.states import State
from relay.core.values import Direction, MessageStatus, TodoStatus
from relay.store.models import Instance, Message, Todo, Transition

#: ``end_reason`` / ``failure_reason`` of a conversation the contact opted out of.
OPTED_OUT = "opted_out"
OUTCOMES = (
    "completed",
    "ended_early",
    "opted_out",
    "abandoned",
    "failed",
    "needs_human",
    "live",
)


def _chosen(campaign: str | None, since: datetime | None) -> list[ColumnElement[bool]]:
    where: list[ColumnElement[bool]] = []
    if campaign:
        where.append(Instance.campaign == campaign)
    if since is not None:
        where.append(Instance.created_at >= since)
    return where


def _chosen_ids(campaign: str | None, since: datetime | None) -> Select[Any]:
    return select(Instance.id).where(*_chosen(campaign, since))


def _of_chosen(column: Any, campaign: str | None, since: datetime | None) -> list[Any]:
    """``column IN (chosen instances)``, or nothing when every instance is chosen."""
    if campaign is None and since is None:
        return [column.is_not(None)]
    return [column.in_(_chosen_ids(campaign, since))]


def _outcome() -> Any:
    opted = (Instance.end_reason == OPTED_OUT) | (Instance.failure_reason == OPTED_OUT)
    completed = Instance.state == State.COMPLETED.value
    open_todo = (
        select(Todo.position)
        .where(
            Todo.instance_id == Instance.id,
            Todo.status.in_([TodoStatus.PENDING.value, TodoStatus.IN_PROGRESS.value]),
        )
        .exists()
    )
    return case(
        (opted, "opted_out"),
        # The todo lookup runs for completed conversations only (by primary key).
        (completed & ~open_todo, "completed"),
        (completed, "ended_early"),
        (Instance.state == State.ABANDONED.value, "abandoned"),
        (Instance.state == State.FAILED.value, "failed"),
        (Instance.state == State.NEEDS_HUMAN_INTERVENTION.value, "needs_human"),
        else_="live",
    )


def _conversations_with(session: Session, where: Any, campaign: Any, since: Any) -> int:
    """How many chosen conversations have a message matching ``where``."""
    return int(
        session.scalar(
            select(func.count(func.distinct(Message.instance_id))).where(
                where, *_of_chosen(Message.instance_id, campaign, since)
            )
        )
        or 0
    )


def funnel(session: Session, *, campaign: str | None, since: datetime | None) -> dict[str, int]:
    """started, delivered, replied and each outcome's count (three statements)."""
    outcome = _outcome().label("outcome")
    counts = dict.fromkeys(OUTCOMES, 0)
    for name, count in session.execute(
        select(outcome, func.count()).where(*_chosen(campaign, since)).group_by(outcome)
    ):
        counts[str(name)] = int(count)
    sent = (Message.direction == Direction.OUTBOUND.value) & (
        Message.status == MessageStatus.SENT.value
    )
    reply = (Message.direction == Direction.INBOUND.value) & (Message.kind == "message")
    return {
        "started": sum(counts.values()),
        "delivered": _conversations_with(session, sent, campaign, since),
        "replied": _conversations_with(session, reply, campaign, since),
        **counts,
    }


def _seconds(session: Session, later: Any, earlier: Any) -> Any:
    if session.get_bind().dialect.name == "postgresql":
        return func.extract("epoch", later - earlier)
    return (func.julianday(later) - func.julianday(earlier)) * 86400.0


def median_first_reply(
    session: Session, *, campaign: str | None, since: datetime | None
) -> float | None:
    """Median seconds from the first delivered message to the first reply (counted
    and sorted in the database; one or two rows come back)."""
    reply = (Message.direction == Direction.INBOUND.value) & (Message.kind == "message")
    replies = (
        select(
            Message.instance_id.label("instance_id"),
            func.min(Message.created_at).label("first_reply"),
        )
        .where(reply, *_of_chosen(Message.instance_id, campaign, since))
        .group_by(Message.instance_id)
        .subquery()
    )
    sent = aliased(Message)
    first_sent = (
        select(func.min(sent.sent_at))
        .where(
            sent.instance_id == replies.c.instance_id,
            sent.direction == Direction.OUTBOUND.value,
            sent.status == MessageStatus.SENT.value,
        )
        .scalar_subquery()
    )
    pairs = select(replies.c.first_reply, first_sent.label("first_sent")).subquery()
    delay = _seconds(session, pairs.c.first_reply, pairs.c.first_sent)
    ranked = (
        select(
            delay.label("delay"),
            func.row_number().over(order_by=delay).label("rank"),
            func.count().over().label("total"),
        )
        .where(pairs.c.first_sent.is_not(None), pairs.c.first_reply >= pairs.c.first_sent)
        .subquery()
    )
    # The middle row (odd count) or the two middle rows (even count), in one statement.
    middle = session.scalars(
        select(ranked.c.delay).where(
            ranked.c.rank.in_([(ranked.c.total + 1) / 2, (ranked.c.total + 2) / 2])
        )
    ).all()
    values = [float(v) for v in middle if v is not None]
    return sum(values) / len(values) if values else None


def followups_sent(session: Session, *, campaign: str | None, since: datetime | None) -> int:
    return int(
        session.scalar(
            select(func.count())
            .select_from(Transition)
            .where(
                Transition.event == "followup_sent",
                *_of_chosen(Transition.instance_id, campaign, since),
            )
        )
        or 0
    )


def failed_deliveries(
    session: Session, *, campaign: str | None, since: datetime | None, limit: int = 10
) -> list[tuple[str, int]]:
    """Outbound messages that failed for good, counted by their last error."""
    reason = func.coalesce(Message.last_error, "unknown").label("reason")
    count = func.count().label("count")
    rows = session.execute(
        select(reason, count)
        .where(
            Message.direction == Direction.OUTBOUND.value,
            Message.status == MessageStatus.FAILED.value,
            *_of_chosen(Message.instance_id, campaign, since),
        )
        .group_by(reason)
        .order_by(count.desc(), reason)
        .limit(limit)
    ).all()
    return [(str(r), int(c)) for r, c in rows]
