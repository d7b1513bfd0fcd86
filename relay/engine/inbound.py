"""Inbound messages: store at once, route to the live instance, honour opt-outs.

Whatever state the contact's instance is in, the message is committed the
moment it arrives. A message the instance cannot take yet (paused, waiting
for a human, mid-follow-up) stays ``received`` and is answered when the state
allows (``transitions.apply_event`` re-checks on entering WAITING_FOR_REPLY).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from relay.core.optout import OPT_IN_WORDS, OPT_OUT_WORDS, is_opt_in, is_opt_out
from relay.core.states import Event, State
from relay.core.values import Author, Direction, MessageStatus
from relay.engine import transitions
from relay.store import queries
from relay.store.models import Contact, Instance, Message

OPTED_OUT = "opted_out"


@dataclass(frozen=True)
class Keywords:
    opt_out: tuple[str, ...] = OPT_OUT_WORDS
    opt_in: tuple[str, ...] = OPT_IN_WORDS

    @classmethod
    def from_config(cls, out: str | Sequence[str], into: str | Sequence[str]) -> Keywords:
        return cls(_words(out) or OPT_OUT_WORDS, _words(into) or OPT_IN_WORDS)


def _words(value: str | Sequence[str]) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    return tuple(w.strip().upper() for w in items if str(w).strip())


def record_inbound(
    session: Session,
    person: Contact,
    body: str,
    now: datetime,
    *,
    keywords: Keywords = Keywords(),
    channel: str | None = None,
) -> Message:
    """Store one inbound message and apply what it means."""
    holder = queries.slot_holder(session, person.id, lock=True)
    message = Message(
        instance_id=holder.id if holder else None,
        contact_id=person.id,
        direction=Direction.INBOUND.value,
        author=Author.CONTACT.value,
        body=body,
        status=MessageStatus.RECEIVED.value,
        channel=channel,
        attempts=0,
        created_at=now,
    )
    session.add(message)
    session.flush()
    if is_opt_out(body, keywords.opt_out):
        message.status = MessageStatus.PROCESSED.value
        message.processed_at = now
        opt_out(session, person, now, reason=f"contact wrote {body[:60]!r}")
        return message
    if person.opted_out_at is not None and is_opt_in(body, keywords.opt_in):
        message.status = MessageStatus.PROCESSED.value
        message.processed_at = now
        opt_in(person, now)
        return message
    if holder is not None and holder.state == State.WAITING_FOR_REPLY.value:
        transitions.apply_event(session, holder, Event.CONTACT_REPLIES, now=now, actor="contact")
    return message


def opt_out(session: Session, person: Contact, now: datetime, *, reason: str) -> None:
    """Block the contact: end the live instance, fail queued ones, hold every outbound."""
    if person.opted_out_at is None:
        person.opted_out_at = now
        person.opt_out_reason = reason
        person.updated_at = now
    for instance in _unfinished(session, person.id):
        if _waits_in_queue(instance):
            transitions.apply_event(
                session, instance, Event.CANCEL, now=now, actor="contact", reason=OPTED_OUT
            )
            instance.failure_reason = OPTED_OUT
        elif not State(instance.state).terminal:
            transitions.apply_event(
                session,
                instance,
                Event.CONTACT_OPTED_OUT,
                now=now,
                actor="contact",
                reason=OPTED_OUT,
            )
    for message in session.scalars(
        select(Message).where(
            Message.contact_id == person.id,
            Message.direction == Direction.OUTBOUND.value,
            Message.status == MessageStatus.QUEUED.value,
        )
    ):
        message.status = MessageStatus.BLOCKED.value
        message.last_error = "contact opted out"
        message.next_attempt_at = None


def opt_in(person: Contact, now: datetime) -> None:
    person.opted_out_at = None
    person.opt_out_reason = None
    person.updated_at = now


def _unfinished(session: Session, contact_id: int) -> list[Instance]:
    """The contact's non-terminal instances, queued ones first, so that ending
    the live one afterwards promotes nobody into the slot it frees."""
    rows = session.scalars(
        select(Instance)
        .where(
            Instance.contact_id == contact_id,
            Instance.state.not_in([s.value for s in State if s.terminal]),
        )
        .order_by(Instance.seq)
        .with_for_update()
    ).all()
    queued = [r for r in rows if _waits_in_queue(r)]
    live = [r for r in rows if not _waits_in_queue(r)]
    return queued + live


def _waits_in_queue(instance: Instance) -> bool:
    """QUEUED, or paused while QUEUED: behind the contact's live conversation."""
    return instance.state == State.QUEUED.value or (
        instance.state == State.PAUSED.value and instance.previous_state == State.QUEUED.value
    )
