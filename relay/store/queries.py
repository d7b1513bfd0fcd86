"""Named queries over the store; the engine asks these instead of writing SQL inline.

Reads return Core rows of :mod:`relay.store.tables`. The queries whose caller
changes what it gets (a command's instance, todos, inbound) return the ORM's
objects and import :mod:`relay.store.models` where they run, so that a read
command never loads it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from sqlalchemy import Row, Select, and_, func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from relay.core.values import MessageStatus
from relay.store.hotpath import prepared
from relay.store.hotpath.among import among, among_param
from relay.store.hotpath.prepared import dialect_of, per_dialect
from relay.store.tables import (
    CONTACT_SLOT_INDEX,
    events,
    messages,
    todos,
)

if TYPE_CHECKING:
    from datetime import datetime

    from relay.store.hotpath.prepared import AnySelect
    from relay.store.models import Message, Todo


def is_violation(exc: IntegrityError, name: str, column: str) -> bool:
    """Whether ``exc`` broke the named unique index (PostgreSQL) or its column (SQLite)."""
    diag = getattr(exc.orig, "diag", None)
    if diag is not None and getattr(diag, "constraint_name", None):
        return diag.constraint_name == name
    return column in str(exc.orig)


def is_slot_violation(exc: IntegrityError) -> bool:
    return is_violation(exc, CONTACT_SLOT_INDEX, "instances.contact_slot")


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


def history_of(session: Session, instance_id: str) -> Sequence[Row[Any]]:
    """The conversation's state changes, oldest first (its rows of the record that
    have a ``to_state``)."""
    return session.execute(
        select(events)
        .where(events.c.instance_id == instance_id, events.c.to_state.is_not(None))
        .order_by(events.c.id)
    ).all()


def unprocessed_inbound(session: Session, instance_id: str) -> Sequence[Message]:
    from relay.store.models import Message

    return session.scalars(
        select(Message)
        .where(Message.instance_id == instance_id, Message.status == MessageStatus.RECEIVED.value)
        .order_by(Message.id)
    ).all()


# -- the same reads for a batch of instances (one query each, not one per instance) ----------


def todos_for(session: Session, instance_ids: Sequence[str]) -> dict[str, list[Todo]]:
    from relay.store.models import Todo

    found: dict[str, list[Todo]] = {i: [] for i in instance_ids}
    for todo in session.scalars(
        select(Todo).where(among(session, Todo.instance_id, instance_ids)).order_by(Todo.position)
    ):
        found[todo.instance_id].append(todo)
    return found


#: What a turn's context reads of a todo: the answer wanted and recorded.
TODO_CONTEXT_COLUMNS = (
    todos.c.instance_id,
    todos.c.position,
    todos.c.text,
    todos.c.status,
    todos.c.answer_kind,
    todos.c.answer_spec,
    todos.c.required,
    todos.c.answer,
)


def todo_rows_for(
    session: Session, instance_ids: Sequence[str], *, whole: bool = False
) -> dict[str, list[Any]]:
    """:func:`todos_for` as read-only rows of :data:`TODO_CONTEXT_COLUMNS` (``whole``:
    every column, for the views)."""
    found: dict[str, list[Any]] = {i: [] for i in instance_ids}
    for row in prepared.batch(session, partial(_todo_rows, whole=whole), instance_ids):
        found[row.instance_id].append(row)
    return found


@per_dialect
def _todo_rows(dialect: str, whole: bool) -> AnySelect:
    columns = todos.c if whole else TODO_CONTEXT_COLUMNS
    return (
        select(*columns)
        .where(among_param(dialect, todos.c.instance_id, "ids"))
        .order_by(todos.c.position)
    )


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


def count_by(session: Session, column: Any, *where: Any) -> dict[str, int]:
    rows = session.execute(select(column, func.count()).where(*where).group_by(column)).all()
    return {str(key): int(count) for key, count in rows}


# -- threads ----------------------------------------------------------------------------------


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


def count_messages(session: Session, instance_id: str, *where: Any) -> int:
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
        return count_messages(session, instance_id, sending)
    since_then = and_(messages.c.status == MessageStatus.SENT.value, messages.c.sent_at >= since)
    return count_messages(session, instance_id, or_(sending, since_then))


def messages_by_id(session: Session, message_ids: Sequence[int]) -> dict[int, Message]:
    from relay.store.models import Message

    if not message_ids:
        return {}
    return {m.id: m for m in session.scalars(select(Message).where(Message.id.in_(message_ids)))}


def latest_reasons(session: Session, instance_ids: Sequence[str]) -> dict[str, str]:
    """Each instance's latest state change's reason (why it is where it is), one query."""
    if not instance_ids:
        return {}
    latest = (
        select(func.max(events.c.id))
        .where(events.c.instance_id.in_(instance_ids), events.c.to_state.is_not(None))
        .group_by(events.c.instance_id)
    )
    rows = session.execute(
        select(events.c.instance_id, events.c.reason).where(events.c.id.in_(latest))
    )
    return {instance_id: reason for instance_id, reason in rows if reason}
