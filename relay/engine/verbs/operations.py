"""The operator's look at the whole store: contacts, inbound no conversation took,
and retrying a failed delivery. The verbs (:mod:`relay.engine.verbs.lookups`,
:mod:`relay.engine.verbs.conversations`) call these in their transaction."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from relay.core.errors import InvalidInput, NotFound, Refused
from relay.core.states import State
from relay.core.values import Direction, MessageStatus
from relay.engine.views.instances import MessageView
from relay.engine.views.reports import ContactRow, InboxItem, contact_name
from relay.store import instances, reads
from relay.store.contacts import address_of
from relay.store.models import Contact, Message

INBOX_KINDS = ("unrouted", "late", "rejected")


def contact_rows(session: Session, *, campaign: str | None, limit: int) -> list[ContactRow]:
    if limit < 1:
        raise InvalidInput("--limit must be at least 1")
    rows = reads.contact_rows(session, campaign=campaign, limit=limit)
    return [
        ContactRow(
            address=person.address,
            kind=person.kind,
            name=contact_name(person.fields),
            timezone=person.timezone,
            fields=dict(person.fields or {}),
            opted_out_at=person.opted_out_at,
            undeliverable_at=person.undeliverable_at,
            live_instance=live,
            queued=int(queued or 0),
            conversations=int(conversations or 0),
            created_at=person.created_at,
        )
        for person, conversations, queued, live in rows
    ]


def inbox(session: Session, *, kinds: tuple[str, ...], limit: int) -> list[InboxItem]:
    """Unrouted, late and rejected inbound, newest first (up to ``limit`` of each)."""
    unknown = set(kinds) - set(INBOX_KINDS)
    if unknown:
        raise InvalidInput(
            f"unknown inbox kind {sorted(unknown)[0]!r} (kinds: unrouted, late, rejected)"
        )
    items: list[InboxItem] = []
    if "unrouted" in kinds:
        items += [_item("unrouted", m, a) for m, a in reads.unrouted_inbound(session, limit)]
    if "late" in kinds:
        items += [_item("late", m, a) for m, a in reads.late_inbound(session, limit)]
    if "rejected" in kinds:
        items += [
            InboxItem("rejected", r.id, r.created_at, r.channel, r.sender, r.body, note=r.error)
            for r in reads.rejected_inbound(session, limit)
        ]
    items.sort(key=lambda item: item.at, reverse=True)
    return items[:limit]


def _item(kind: str, message: Message, address: str) -> InboxItem:
    return InboxItem(
        kind,
        message.id,
        message.created_at,
        message.channel,
        address,
        message.body,
        instance_id=message.instance_id,
        note=message.note,
    )


#: What ``relay retry`` sends again.
RETRIABLE = (MessageStatus.FAILED.value, MessageStatus.UNKNOWN.value)


def retry(session: Session, message_id: int, now: datetime) -> MessageView:
    """Queue a failed outbound message, or one whose fate a crash left unknown (the
    operator allows a second hand-over), again (attempts from zero, due now), if
    its conversation is still live and its contact can still be reached."""
    # An id no column can hold names no message (rather than an overflow error).
    message = (
        session.get(Message, message_id, with_for_update=True) if 0 < message_id < 2**63 else None
    )
    if message is None or message.direction != Direction.OUTBOUND.value:
        raise NotFound(f"no outbound message {message_id}")
    person = session.get(Contact, message.contact_id)
    assert person is not None
    if message.status not in RETRIABLE:
        raise Refused(
            f"message {message_id} is {message.status}; only a failed delivery or one "
            "whose fate is unknown can be retried"
        )
    instance = (
        instances.by_id(session, message.instance_id) if message.instance_id else None
    )
    if instance is None or State(instance.state).terminal:
        state = instance.state if instance else "gone"
        raise Refused(
            f"message {message_id} belongs to a conversation that is {state}; "
            "a finished conversation sends nothing more (start a new one)"
        )
    if person.opted_out_at is not None:
        raise Refused(f"message {message_id}: {person.address} has opted out")
    if person.undeliverable_at is not None:
        raise Refused(
            f"message {message_id}: {person.address} is undeliverable "
            f"({person.undeliverable_reason}); `relay contact deliverable` clears it"
        )
    message.status = MessageStatus.QUEUED.value
    message.attempts = 0
    message.next_attempt_at = now
    message.lease_owner = None
    session.flush()
    return MessageView.build(message, person.address)


def message_view(session: Session, message_id: int) -> MessageView:
    """One message as the operator sees it (what ``relay send`` answers)."""
    message = session.get(Message, message_id)
    if message is None:
        raise NotFound(f"no message {message_id}")
    return MessageView.build(message, address_of(session, message.contact_id))
