"""Outbox rows in doubt: ``sending`` ones whose sender died between handing them
to a channel and recording the answer, and those whose fate stayed unknown.

The dispatcher leases such a row (:func:`claim_in_doubt`), asks its channel
outside any transaction, and settles it with what it learnt
(:func:`settle_sent`, :func:`settle_again`, :func:`settle_unknown`), each only
while its lease still holds the row (:func:`still_ours`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Select, bindparam, select
from sqlalchemy.orm import Session

from relay.core.values import Direction, MessageStatus
from relay.store.claims import skip_locked
from relay.store.hotpath import locked_rows
from relay.store.hotpath.locked_rows import MessageFields, MessageRow
from relay.store.hotpath.prepared import dialect_of, per_dialect
from relay.store.models import Message
from relay.store.tables import contacts, messages


def claim_in_doubt(
    session: Session,
    now: datetime,
    lease: timedelta,
    limit: int,
    owner: str | None,
    *,
    message_id: int | None = None,
    instance_id: str | None = None,
) -> list[MessageRow]:
    """Lease the ``sending`` messages whose sender died (the lease ran out, or its
    daemon is known dead: ``claims.release_claims_of``) to ``owner``, to ask their
    channel what became of them: no attempt is counted, nothing is sent. Oldest
    first, locked (``SKIP LOCKED`` on PostgreSQL: another worker asks about those).
    With ``message_id`` or ``instance_id``: only those of that message's
    conversation, or of that conversation."""
    query = _in_doubt(dialect_of(session), message_id is not None, instance_id is not None)
    params = {"now": now, "limit": limit, "message_id": message_id, "instance_id": instance_id}
    rows = locked_rows.rows(session, MessageRow, query, params)
    for message in rows:
        message.next_attempt_at = now + lease
        message.lease_owner = owner
    locked_rows.write(session, rows)
    return rows


@per_dialect
def _in_doubt(dialect: str, one_message: bool, one_instance: bool) -> Select[Any]:
    """One statement (a claim runs it on every delivery pass)."""
    query = locked_rows.selecting(MessageRow).where(
        Message.status == MessageStatus.SENDING.value,
        Message.next_attempt_at <= bindparam("now"),
    )
    if one_message:
        of = select(Message.instance_id).where(Message.id == bindparam("message_id"))
        query = query.where(Message.instance_id == of.scalar_subquery())
    elif one_instance:
        query = query.where(Message.instance_id == bindparam("instance_id"))
    return skip_locked(dialect, query.order_by(Message.id).limit(bindparam("limit")))


def recorded_elsewhere(
    session: Session, rows: Sequence[MessageFields], since: datetime
) -> dict[tuple[int, str], frozenset[str]]:
    """By (contact, channel) of ``rows``: the provider ids recorded since ``since``
    for outbound messages to that contact on that channel. A provider that can only
    be asked by recipient and text (Twilio) lists those messages too, and one with
    the same text (each of a contact's conversations opens with the same greeting)
    must not be taken for the message in doubt."""
    pairs = {(row.contact_id, row.channel or "console") for row in rows}
    found: dict[tuple[int, str], set[str]] = {pair: set() for pair in pairs}
    for channel in {channel for _, channel in pairs}:
        people = sorted(contact for contact, on in pairs if on == channel)
        recorded = session.execute(
            select(messages.c.contact_id, messages.c.provider_message_id).where(
                messages.c.channel == channel,
                messages.c.sent_at >= since,
                messages.c.direction == Direction.OUTBOUND.value,
                messages.c.contact_id.in_(people),
                messages.c.provider_message_id.is_not(None),
            )
        )
        for contact_id, provider_id in recorded:
            found[(contact_id, channel)].add(provider_id)
    return {pair: frozenset(ids) for pair, ids in found.items()}


def still_ours(message: MessageFields | None, lease_until: datetime) -> bool:
    """Whether the lease :func:`claim_in_doubt` wrote (expiring ``lease_until``)
    still holds the row: nobody settled, retried or claimed it meanwhile."""
    return (
        message is not None
        and message.status == MessageStatus.SENDING.value
        and message.next_attempt_at == lease_until
    )


def settle_again(message: MessageFields, now: datetime) -> None:
    """It did not go, or may go twice safely: ``queued`` again, due at once (the
    claim that takes it checks the conversation and the contact again)."""
    message.status = MessageStatus.QUEUED.value
    message.next_attempt_at = now
    message.lease_owner = None


def settle_unknown(message: MessageFields, why: str) -> None:
    """Nobody can tell whether it went: its fate is ``unknown`` until the operator
    decides (never due; the conversation's later messages wait behind it)."""
    message.status = MessageStatus.UNKNOWN.value
    message.next_attempt_at = None
    message.lease_owner = None
    message.last_error = f"fate unknown after a crash: {why}"


def unknown_fates(session: Session) -> Sequence[Any]:
    """Outbound whose fate is unknown, oldest first: id, conversation, channel,
    address, when it was written, and why (``relay doctor``)."""
    return session.execute(
        select(
            messages.c.id,
            messages.c.instance_id,
            messages.c.channel,
            contacts.c.address,
            messages.c.created_at,
            messages.c.last_error,
        )
        .join(contacts, contacts.c.id == messages.c.contact_id)
        .where(
            messages.c.direction == Direction.OUTBOUND.value,
            messages.c.status == MessageStatus.UNKNOWN.value,
        )
        .order_by(messages.c.id)
    ).all()
