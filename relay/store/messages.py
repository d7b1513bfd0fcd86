"""A conversation's messages: its transcript and history, the inbound its agent
has not seen yet, the thread ids a reply may name, what is in flight, the last
message of each conversation and the next one to go out. Reads return Core rows
where they can; those whose caller changes what it gets return mapped objects
and import :mod:`relay.store.models` where they run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import Row, Select, and_, func, or_, select
from sqlalchemy.orm import Session

from relay.core.values import Direction, MessageStatus
from relay.store.due import OUTBOX_PENDING
from relay.store.hotpath import prepared
from relay.store.hotpath.among import among_param
from relay.store.hotpath.prepared import dialect_of, per_dialect
from relay.store.tables import messages

if TYPE_CHECKING:
    from datetime import datetime

    from relay.store.hotpath.prepared import AnySelect
    from relay.store.models import Message


UNDELIVERABLE = (
    MessageStatus.FAILED.value,
    MessageStatus.BLOCKED.value,
    MessageStatus.CANCELLED.value,
    # Drafts a person turned down (or replaced by an edited copy) were never said.
    MessageStatus.REJECTED.value,
    MessageStatus.EDITED.value,
)


def transcript_of(
    session: Session, instance_id: str, limit: int | None = None, *, said_only: bool = False
) -> list[Row[Any]]:
    """The instance's transcript in order; with ``limit``, the most recent ``limit`` rows.

    ``said_only`` leaves out outbound messages that never reached the contact
    (failed, blocked, cancelled): an agent must not think it said them.
    """
    query = select(messages).where(messages.c.instance_id == instance_id)
    if said_only:
        query = query.where(messages.c.status.not_in(UNDELIVERABLE))
    if limit is not None:
        rows = session.execute(query.order_by(messages.c.id.desc()).limit(limit)).all()
        return list(reversed(rows))
    return list(session.execute(query.order_by(messages.c.id)).all())


def unprocessed_inbound(session: Session, instance_id: str) -> Sequence[Message]:
    from relay.store.models import Message

    return session.scalars(
        select(Message)
        .where(Message.instance_id == instance_id, Message.status == MessageStatus.RECEIVED.value)
        .order_by(Message.id)
    ).all()


# -- the same reads for a batch of instances (one query each, not one per instance) ----------


def unprocessed_inbound_for(
    session: Session, instance_ids: Sequence[str]
) -> dict[str, list[Message]]:

    found: dict[str, list[Message]] = {i: [] for i in instance_ids}
    query = _unprocessed_inbound(dialect_of(session))
    for message in session.scalars(query, prepared.batch_params(session, instance_ids)):
        found[message.instance_id or ""].append(message)
    return found


@per_dialect
def _unprocessed_inbound(dialect: str) -> Select[Message]:
    from relay.store.models import Message

    return (
        select(Message)
        .where(
            among_param(dialect, Message.instance_id, "ids"),
            Message.status == MessageStatus.RECEIVED.value,
        )
        .order_by(Message.id)
    )


def thread_of(session: Session, instance_id: str) -> tuple[str, ...]:
    """Provider ids of the conversation's messages, oldest first (an email thread)."""
    rows = session.scalars(
        select(messages.c.provider_message_id)
        .where(
            messages.c.instance_id == instance_id,
            messages.c.provider_message_id.is_not(None),
            messages.c.status.not_in(UNDELIVERABLE),
        )
        .order_by(messages.c.id)
    )
    return tuple(r for r in rows if r)


def threads_for(
    session: Session, instance_ids: Sequence[str], channels: Mapping[str, str] | None = None
) -> dict[str, tuple[str, ...]]:
    """:func:`thread_of` for several instances in one query; with ``channels``
    (``{instance id: channel}``), only the messages on that channel: a conversation
    that moved from SMS to email threads its mail under its mail alone."""
    found: dict[str, list[str]] = {i: [] for i in instance_ids}
    if not instance_ids:
        return {}
    wanted = channels or {}
    for instance_id, provider_id, channel in prepared.batch(session, _threads, instance_ids):
        if channel is not None and wanted.get(instance_id, channel) != channel:
            continue
        found[str(instance_id)].append(str(provider_id))
    return {key: tuple(ids) for key, ids in found.items()}


@per_dialect
def _threads(dialect: str) -> AnySelect:
    return (
        select(messages.c.instance_id, messages.c.provider_message_id, messages.c.channel)
        .where(
            among_param(dialect, messages.c.instance_id, "ids"),
            messages.c.provider_message_id.is_not(None),
            messages.c.status.not_in(UNDELIVERABLE),
        )
        .order_by(messages.c.id)
    )


def count(session: Session, instance_id: str, *where: Any) -> int:
    """How many of the conversation's messages match ``where``."""
    query = select(func.count()).select_from(messages)
    return int(session.scalar(query.where(messages.c.instance_id == instance_id, *where)) or 0)


def in_flight(session: Session, instance_id: str, since: datetime | None = None) -> int:
    """Messages claimed and being handed to a channel (they may still arrive); with
    ``since`` (a pause's or cancel's time), also those whose hand-over finished at
    or after it: a send past the gate before the command took the conversation's
    lock may be recorded while the command runs, so it is neither ``sending`` when
    counted nor delivered before the command."""
    sending = messages.c.status == MessageStatus.SENDING.value
    if since is None:
        return count(session, instance_id, sending)
    since_then = and_(messages.c.status == MessageStatus.SENT.value, messages.c.sent_at >= since)
    return count(session, instance_id, or_(sending, since_then))


def by_ids(session: Session, message_ids: Sequence[int]) -> dict[int, Message]:
    from relay.store.models import Message

    if not message_ids:
        return {}
    return {m.id: m for m in session.scalars(select(Message).where(Message.id.in_(message_ids)))}


def latest_for(session: Session, instance_ids: Sequence[str]) -> dict[str, Message]:
    """Each instance's latest transcript row (one statement)."""
    from relay.store.models import Message

    if not instance_ids:
        return {}
    latest = (
        select(func.max(Message.id))
        .where(Message.instance_id.in_(instance_ids))
        .group_by(Message.instance_id)
    )
    return {
        m.instance_id or "": m
        for m in session.scalars(select(Message).where(Message.id.in_(latest)))
    }


def next_outbound(session: Session, instance_id: str) -> Row[Any] | None:
    """The conversation's undelivered outbound (queued, sending, or of unknown
    fate) that goes first."""
    return session.execute(
        select(messages)
        .where(
            messages.c.instance_id == instance_id,
            messages.c.direction == Direction.OUTBOUND.value,
            messages.c.status.in_(OUTBOX_PENDING),
        )
        .order_by(messages.c.next_attempt_at, messages.c.id)
        .limit(1)
    ).first()
