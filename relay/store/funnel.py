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

from sqlalchemy import ColumnElement, Select, case, func, literal, select
from sqlalchemy.orm import Session

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


def _per_instance(campaign: str | None, since: datetime | None) -> Any:
    """One row per chosen instance that has messages: first delivery, first reply."""
    outbound_sent = (Message.direction == Direction.OUTBOUND.value) & (
        Message.status == MessageStatus.SENT.value
    )
    reply = (Message.direction == Direction.INBOUND.value) & (Message.kind == "message")
    return (
        select(
            Message.instance_id.label("instance_id"),
            func.min(case((outbound_sent, Message.sent_at))).label("first_sent"),
            func.min(case((reply, Message.created_at))).label("first_reply"),
        )
        .where(Message.instance_id.in_(_chosen_ids(campaign, since)))
        .group_by(Message.instance_id)
        .subquery()
    )


def _open_todos(campaign: str | None, since: datetime | None) -> Any:
    still_open = Todo.status.in_([TodoStatus.PENDING.value, TodoStatus.IN_PROGRESS.value])
    return (
        select(Todo.instance_id.label("instance_id"), func.count().label("open"))
        .where(still_open, Todo.instance_id.in_(_chosen_ids(campaign, since)))
        .group_by(Todo.instance_id)
        .subquery()
    )


def _outcome(open_todos: Any) -> Any:
    opted = (Instance.end_reason == OPTED_OUT) | (Instance.failure_reason == OPTED_OUT)
    return case(
        (opted, "opted_out"),
        (
            (Instance.state == State.COMPLETED.value) & (func.coalesce(open_todos.c.open, 0) == 0),
            "completed",
        ),
        (Instance.state == State.COMPLETED.value, "ended_early"),
        (Instance.state == State.ABANDONED.value, "abandoned"),
        (Instance.state == State.FAILED.value, "failed"),
        (Instance.state == State.NEEDS_HUMAN_INTERVENTION.value, "needs_human"),
        else_="live",
    )


def funnel(session: Session, *, campaign: str | None, since: datetime | None) -> dict[str, int]:
    """started, delivered, replied and each outcome's count, in one statement."""
    messages = _per_instance(campaign, since)
    todos = _open_todos(campaign, since)
    outcome = _outcome(todos).label("outcome")
    rows = (
        select(
            outcome,
            (messages.c.first_sent.is_not(None)).label("delivered"),
            (messages.c.first_reply.is_not(None)).label("replied"),
        )
        .select_from(Instance)
        .outerjoin(messages, messages.c.instance_id == Instance.id)
        .outerjoin(todos, todos.c.instance_id == Instance.id)
        .where(*_chosen(campaign, since))
        .subquery()
    )
    one = literal(1)
    totals = select(
        func.count().label("started"),
        func.coalesce(func.sum(case((rows.c.delivered, one), else_=0)), 0).label("delivered"),
        func.coalesce(func.sum(case((rows.c.replied, one), else_=0)), 0).label("replied"),
        *(
            func.coalesce(func.sum(case((rows.c.outcome == name, one), else_=0)), 0).label(name)
            for name in OUTCOMES
        ),
    )
    found = session.execute(totals).one()
    return {key: int(value or 0) for key, value in found._mapping.items()}


def _seconds(session: Session, later: Any, earlier: Any) -> Any:
    if session.get_bind().dialect.name == "postgresql":
        return func.extract("epoch", later - earlier)
    return (func.julianday(later) - func.julianday(earlier)) * 86400.0


def median_first_reply(
    session: Session, *, campaign: str | None, since: datetime | None
) -> float | None:
    """Median seconds from the first delivered message to the first reply (counted
    and sorted in the database; one or two rows come back)."""
    messages = _per_instance(campaign, since)
    delays = (
        select(_seconds(session, messages.c.first_reply, messages.c.first_sent).label("delay"))
        .where(messages.c.first_sent.is_not(None))
        .where(messages.c.first_reply >= messages.c.first_sent)
        .subquery()
    )
    count = int(session.scalar(select(func.count()).select_from(delays)) or 0)
    if count < 1:
        return None
    middle = session.scalars(
        select(delays.c.delay)
        .order_by(delays.c.delay)
        .offset((count - 1) // 2)
        .limit(1 if count % 2 else 2)
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
                Transition.instance_id.in_(_chosen_ids(campaign, since)),
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
            Message.instance_id.in_(_chosen_ids(campaign, since)),
        )
        .group_by(reason)
        .order_by(count.desc(), reason)
        .limit(limit)
    ).all()
    return [(str(r), int(c)) for r, c in rows]
