"""Claiming due work: the only place that knows how claiming works on each database.

On PostgreSQL due rows are locked with ``FOR UPDATE SKIP LOCKED``, so several
daemons take disjoint batches; a claim writes a lease (owner and expiry) and
commits, and work whose lease expired (its process died) is claimed again.
On SQLite every transaction is a write transaction (``BEGIN IMMEDIATE``), which
serialises claimers on the file lock.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, and_, bindparam, exists, func, or_, select, update
from sqlalchemy.orm import Session, aliased

from relay.core.states import HEARTBEAT_STATE, PAUSED_STATE
from relay.core.values import MessageStatus
from relay.store.database import affected
from relay.store.due import OUTBOX_PENDING, TURN_STATES, heartbeat_due, turn_due, undelivered
from relay.store.hotpath import locked_rows, prepared
from relay.store.hotpath.among import among_param
from relay.store.hotpath.locked_rows import InstanceFields, InstanceRow, MessageFields, MessageRow
from relay.store.hotpath.prepared import dialect_of, per_dialect
from relay.store.models import Instance, Message
from relay.store.tables import pushes

if TYPE_CHECKING:
    from relay.store.hotpath.prepared import AnySelect


def skip_locked(dialect: str, query: AnySelect) -> AnySelect:
    if dialect == "postgresql":
        return query.with_for_update(skip_locked=True)
    return query


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
    query = _due_turns(dialect_of(session), instance_id is not None)
    params = {"now": now, "limit": limit, "instance_id": instance_id}
    due = locked_rows.rows(session, InstanceRow, query, params)
    leased = [lease_turn(instance, owner, now + lease) for instance in due]
    locked_rows.write(session, due)
    return leased


@per_dialect
def _due_turns(dialect: str, one: bool) -> Select[Any]:
    query = locked_rows.selecting(InstanceRow).where(*turn_due(bindparam("now")))
    if one:
        query = query.where(Instance.id == bindparam("instance_id"))
    query = query.order_by(Instance.updated_at, Instance.seq).limit(bindparam("limit"))
    return skip_locked(dialect, query)


def lease_turn(instance: InstanceFields, owner: str, expires: datetime) -> tuple[str, int]:
    """Lease the (locked) instance's due turn to ``owner``, counting an attempt;
    returns the (id, version) pair the turn's commit checks against."""
    instance.lease_owner = owner
    instance.lease_expires_at = expires
    instance.turn_attempts += 1
    return instance.id, instance.version


def lock_instance(session: Session, instance_id: str) -> Instance | None:
    return session.scalar(select(Instance).where(Instance.id == instance_id).with_for_update())


def lock_instances(session: Session, instance_ids: list[str]) -> dict[str, InstanceRow]:
    """Lock several instances, in id order (two lockers never wait on each other in
    a circle), as plain rows: the caller writes them (:func:`locked_rows.write`)."""
    query = _lock_instances(dialect_of(session), True)
    ids = prepared.batch_params(session, instance_ids)
    locked = locked_rows.rows(session, InstanceRow, query, ids)
    return {instance.id: instance for instance in locked}


def lock_instance_rows(session: Session, instance_ids: list[str]) -> None:
    """Lock several instances, in id order, reading nothing from them (a delivery
    takes its conversation's lock so a pause or cancel waits for it, or it for them)."""
    if instance_ids:
        prepared.batch(session, partial(_lock_instances, read=False), instance_ids)


def lock_free_instances(session: Session, instance_ids: list[str]) -> set[str]:
    """Lock those of the instances no other transaction holds, in id order, skipping
    the others rather than waiting (``SKIP LOCKED``); the ids locked. For a caller
    that already holds message locks (the outbox claim): waiting for an instance
    there would invert the order every command locks in."""
    if not instance_ids:
        return set()
    locking = partial(_lock_instances, read=False, skip=True)
    return {row.id for row in prepared.batch(session, locking, instance_ids)}


@per_dialect
def _lock_instances(dialect: str, read: bool, skip: bool = False) -> Select[Any]:
    columns = locked_rows.selecting(InstanceRow) if read else select(Instance.id)
    return (
        columns.where(among_param(dialect, Instance.id, "ids"))
        .order_by(Instance.id)
        .with_for_update(skip_locked=skip)
    )


def lock_message(session: Session, message_id: int) -> Message | None:
    return session.scalar(select(Message).where(Message.id == message_id).with_for_update())


def lock_messages(session: Session, message_ids: list[int]) -> dict[int, MessageRow]:
    """Lock several outbox rows, in id order, as plain rows: the caller writes them
    (:func:`locked_rows.write`)."""
    query = _lock_messages(dialect_of(session))
    ids = prepared.batch_params(session, message_ids)
    return {message.id: message for message in locked_rows.rows(session, MessageRow, query, ids)}


@per_dialect
def _lock_messages(dialect: str) -> Select[Any]:
    return (
        locked_rows.selecting(MessageRow)
        .where(among_param(dialect, Message.id, "ids"))
        .order_by(Message.id)
        .with_for_update()
    )


def due_heartbeats(session: Session, now: datetime, limit: int) -> prepared.Rows:
    """Instances waiting for a reply whose heartbeat is due, earliest first, locked:
    what deciding each firing reads (id, version, follow-ups sent and allowed,
    sending window, contact, channel ladder, agent). The firings themselves are
    written for the whole batch at once
    (:func:`relay.engine.conversation.transitions.fire_waiting`)."""
    query = _due_heartbeats(dialect_of(session), False)
    return prepared.run(session, query, {"now": now, "limit": limit})


def due_heartbeat_rows(session: Session, now: datetime, limit: int) -> list[InstanceRow]:
    """:func:`due_heartbeats` read whole, as plain rows to change and write (a
    firing whose follow-ups run in its transaction: ``heartbeat.AtOnce``)."""
    query = _due_heartbeats(dialect_of(session), True)
    return locked_rows.rows(session, InstanceRow, query, {"now": now, "limit": limit})


@per_dialect
def _due_heartbeats(dialect: str, whole: bool) -> AnySelect:
    columns = locked_rows.selecting(InstanceRow) if whole else select(
        Instance.id,
        Instance.version,
        Instance.follow_up_count,
        Instance.max_followups,
        Instance.window,
        Instance.contact_id,
        Instance.ladder,
        Instance.agent,
    )
    query = (
        columns.where(*heartbeat_due(bindparam("now")))
        .order_by(Instance.next_heartbeat_at, Instance.seq)
        .limit(bindparam("limit"))
    )
    return skip_locked(dialect, query)


def due_snoozes(session: Session, now: datetime, limit: int) -> list[Instance]:
    query = (
        select(Instance)
        .where(Instance.state == PAUSED_STATE.value, Instance.paused_until <= now)
        .order_by(Instance.paused_until)
        .limit(limit)
    )
    return list(session.scalars(skip_locked(dialect_of(session), query)).all())


def claim_outbox(
    session: Session,
    now: datetime,
    lease: timedelta,
    limit: int,
    *,
    message_id: int | None = None,
    instance_id: str | None = None,
    owner: str | None = None,
) -> list[MessageRow]:
    """Lease due outbound messages: ``queued`` ones whose time has come. Each is
    marked ``sending`` with one more attempt before the channel is called. With
    ``message_id``, that message and the due ones of its conversation before it;
    with ``instance_id``, that conversation's. (A ``sending`` one whose sender
    died is not among them: its fate is asked first, :func:`claim_in_doubt`.)

    A conversation's messages go in the order they were written: one waits
    while an earlier one of its conversation is undelivered and not due (held,
    backing off, being sent, or in doubt); due ones go together, in order.
    """
    dialect = dialect_of(session)
    query = _due_outbox(dialect, message_id is not None, instance_id is not None)
    params = {"now": now, "limit": limit, "message_id": message_id, "instance_id": instance_id}
    rows = locked_rows.rows(session, MessageRow, query, params)
    if dialect == "postgresql":
        rows = _without_overtakers(session, rows)
    for message in rows:
        lease_outbox_row(vars(message), now + lease, owner)
    locked_rows.write(session, rows)
    return rows


def lease_outbox_row(
    values: MutableMapping[str, Any], expires: datetime, owner: str | None
) -> None:
    """Lease an outbox row's values (a locked row's, or a new row's before its
    insert): ``sending`` until ``expires`` for ``owner``, one more attempt counted."""
    values["status"] = MessageStatus.SENDING.value
    values["attempts"] += 1
    values["next_attempt_at"] = expires
    values["lease_owner"] = owner


def still_leased(message: MessageFields, attempt: int) -> bool:
    """Whether the lease that counted ``attempt`` still holds the outbox row: it is
    ``sending`` and no later claim (after the lease ran out) counted another."""
    return message.status == MessageStatus.SENDING.value and message.attempts == attempt


def unlease_outbox_row(message: MessageFields, due: datetime) -> None:
    """Undo :func:`lease_outbox_row` on a row that did not go: ``queued`` again, due
    at ``due``, its attempt not counted (a locked plain row or ORM object)."""
    message.status = MessageStatus.QUEUED.value
    message.attempts -= 1
    message.next_attempt_at = due
    message.lease_owner = None


@per_dialect
def _due_outbox(dialect: str, one_message: bool, one_instance: bool) -> Select[Any]:
    earlier = aliased(Message)
    now: Any = bindparam("now")
    query = locked_rows.selecting(MessageRow).where(
        Message.status == MessageStatus.QUEUED.value,
        Message.next_attempt_at <= now,
        ~exists().where(
            earlier.instance_id == Message.instance_id,
            earlier.id < Message.id,
            earlier.status.in_(OUTBOX_PENDING),
            or_(
                earlier.status != MessageStatus.QUEUED.value,
                earlier.next_attempt_at.is_(None),
                earlier.next_attempt_at > now,
            ),
        ),
    )
    if one_message:
        # The message and what of its conversation is due before it: were the
        # earlier ones left to a later claim, this one would overtake them.
        target = aliased(Message)
        message_id: Any = bindparam("message_id")
        conversation = select(target.instance_id).where(target.id == message_id).scalar_subquery()
        query = query.where(
            or_(
                Message.id == message_id,
                and_(Message.id < message_id, Message.instance_id == conversation),
            )
        )
    if one_instance:
        query = query.where(Message.instance_id == bindparam("instance_id"))
    return skip_locked(dialect, query.order_by(Message.id).limit(bindparam("limit")))


def _without_overtakers(session: Session, rows: list[MessageRow]) -> list[MessageRow]:
    """The claimed rows less those behind a message of their conversation that is
    still in the outbox and not among them (PostgreSQL).

    ``SKIP LOCKED`` passes over a row another claim has just locked, which to this
    claim still looks due, so the claim's own test lets the next message of that
    conversation through: two daemons would then send one conversation's messages
    side by side, the later one possibly first. Read after the locks are taken, an
    earlier message outside the claim is either still being claimed elsewhere,
    ``sending``, or due and left out: in every case the later ones wait for it, and
    stay ``queued`` (this transaction only holds their locks until it ends)."""
    owners = {row.instance_id for row in rows if row.instance_id is not None}
    if not owners:
        return rows
    first_outside = dict(
        session.execute(
            select(Message.instance_id, func.min(Message.id))
            .where(
                Message.instance_id.in_(owners),
                Message.status.in_(OUTBOX_PENDING),
                Message.id.not_in([row.id for row in rows]),
            )
            .group_by(Message.instance_id)
        ).all()
    )
    return [row for row in rows if row.id < first_outside.get(row.instance_id, row.id + 1)]


def release_claims_of(session: Session, owners: list[str], now: datetime) -> tuple[int, int]:
    """Make the turns and deliveries leased by ``owners`` (processes known to be
    dead) due at once instead of when their leases run out; (turns, messages)."""
    if not owners:
        return 0, 0
    turns = affected(
        session.execute(
            update(Instance)
            .where(Instance.lease_owner.in_(owners))
            .values(lease_owner=None, lease_expires_at=None)
        )
    )
    messages = affected(
        session.execute(
            update(Message)
            .where(Message.lease_owner.in_(owners), Message.status == MessageStatus.SENDING.value)
            .values(next_attempt_at=now)
        )
    )
    return int(turns or 0), int(messages or 0)


def release_held(session: Session, instance_id: str, now: datetime) -> None:
    """Messages held while their conversation was paused are due again."""
    session.execute(
        update(Message)
        .where(
            Message.instance_id == instance_id,
            Message.status == MessageStatus.QUEUED.value,
            Message.next_attempt_at.is_(None),
        )
        .values(next_attempt_at=now)
    )


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
        # The first in index order (state, next_heartbeat_at), not a min() over
        # every waiting instance.
        session.scalar(
            select(Instance.next_heartbeat_at)
            .where(
                Instance.state == HEARTBEAT_STATE.value,
                Instance.next_heartbeat_at.is_not(None),
                ~undelivered(Instance.id),
            )
            .order_by(Instance.next_heartbeat_at)
            .limit(1)
        ),
        session.scalar(
            select(func.min(Message.next_attempt_at)).where(Message.status.in_(OUTBOX_PENDING))
        ),
        session.scalar(
            select(func.min(Instance.paused_until)).where(Instance.state == PAUSED_STATE.value)
        ),
        # Turns not leased (or whose lease ran out), including first messages
        # held for the sending window (due at ``not_before``).
        session.scalar(
            select(func.min(func.coalesce(Instance.not_before, Instance.updated_at))).where(
                Instance.state.in_(TURN_STATES),
                or_(Instance.lease_expires_at.is_(None), Instance.lease_expires_at <= now),
            )
        ),
        # What ``relay serve`` stored and no pulse has taken yet (the oldest by key).
        session.scalar(select(pushes.c.received_at).order_by(pushes.c.id).limit(1)),
    ]
    found = [c for c in candidates if c is not None]
    return min(found) if found else None
