"""Opting a contact out and back in: the one place that ends their conversations
and holds what is queued for them (an inbound STOP, a complaint, a provider's
opt-out error, the operator's ``relay contact opt-out``)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from relay.core.outcomes import OPTED_OUT
from relay.core.states import Event, State, waits_in_queue
from relay.core.values import MessageStatus
from relay.engine.conversation import transitions
from relay.store import contact_work, on_commit
from relay.store.models import Contact, Instance

#: The contacts a transaction opted out, and when: whoever commits it waits for
#: their sends in flight before answering (:func:`opted_out_in`).
_NEWLY_OUT = on_commit.collection("relay_opted_out")


def opt_out(session: Session, person: Contact, now: datetime, *, reason: str) -> None:
    """Block the contact: end the live instance, fail queued ones, hold every outbound."""
    if person.opted_out_at is None:
        person.opted_out_at = now
        person.opt_out_reason = reason
        person.updated_at = now
        on_commit.add(session, _NEWLY_OUT, (person.id, now))
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
    _hold_outbound(session, person.id, MessageStatus.BLOCKED, "contact opted out")


def _hold_outbound(session: Session, contact_id: int, status: MessageStatus, why: str) -> None:
    """Nothing queued for the contact will go: mark it ``status`` with the reason."""
    for message in contact_work.queued_outbound_to(session, contact_id):
        message.status = status.value
        message.last_error = why
        message.next_attempt_at = None


def opted_out_in(session: Session) -> list[tuple[int, datetime]]:
    """The contacts this transaction opted out so far (a savepoint rolled back
    drops its own), with the time of each opt-out."""
    return on_commit.collected(session, _NEWLY_OUT)


def opt_in(person: Contact, now: datetime) -> None:
    person.opted_out_at = None
    person.opt_out_reason = None
    person.updated_at = now


def _unfinished(session: Session, contact_id: int) -> list[Instance]:
    """The contact's non-terminal instances, queued ones first, so that ending
    the live one afterwards promotes nobody into the slot it frees."""
    rows = contact_work.lock_unfinished(session, contact_id)
    queued = [r for r in rows if _waits_in_queue(r)]
    live = [r for r in rows if not _waits_in_queue(r)]
    return queued + live


def _waits_in_queue(instance: Instance) -> bool:
    return waits_in_queue(State(instance.state), transitions.previous_of(instance))
