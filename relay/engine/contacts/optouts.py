"""Opting a contact out and back in: the one place that ends their conversations
and holds what is queued for them (an inbound STOP, a complaint, a provider's
opt-out error, the operator's ``relay contact opt-out``).

An opt-out of one kind of address (``kind``, with ``[compliance] optout_scope =
"channel"``) marks that address only: conversations writing there move to the
next open rung of their ladder, or end as after a whole opt-out when none is
left, and what is queued for that kind is held; the outbox screen refuses any
later message to it (:mod:`relay.engine.outbox.screen`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from relay.core import ladder
from relay.core.outcomes import OPTED_OUT
from relay.core.states import Event, State, waits_in_queue
from relay.core.values import MessageStatus
from relay.engine.conversation import fallback, transitions
from relay.store import contact_addresses, contact_work, on_commit
from relay.store.models import Contact, Instance, Message

#: The named on-commit collection (:mod:`relay.store.on_commit`) of the contacts a
#: transaction opted out, each as ``(contact id, when)``: whoever commits it reads
#: ``on_commit.collected(session, NEWLY_OUT)`` (a savepoint rolled back drops its own)
#: and waits for their sends in flight before answering.
NEWLY_OUT = on_commit.collection("relay_opted_out")


def opt_out(
    session: Session, person: Contact, now: datetime, *, reason: str, kind: str | None = None
) -> None:
    """Block the contact: end the live instance, fail queued ones, hold every outbound.
    ``kind``: block only the contact's address of that kind (see the module); a
    contact without one is blocked whole (a no is never lost)."""
    if kind is not None and contact_addresses.mark_opted_out(
        session, person.id, kind, now, reason
    ):
        person.updated_at = now
        # Its sends in flight are waited for too (all of the contact's: a superset).
        on_commit.add(session, NEWLY_OUT, (person.id, now))
        _opt_out_kind(session, person, kind, now)
        return
    if person.opted_out_at is None:
        person.opted_out_at = now
        person.opt_out_reason = reason
        person.updated_at = now
        on_commit.add(session, NEWLY_OUT, (person.id, now))
    for instance in _unfinished(session, person.id):
        _end(session, instance, now)
    _hold_outbound(session, person.id, "contact opted out")


def _opt_out_kind(session: Session, person: Contact, kind: str, now: datetime) -> None:
    for instance in _unfinished(session, person.id):
        if not fallback.leave_kind(session, instance, person, kind, now):
            _end(session, instance, now)
    _hold_outbound(session, person.id, f"contact opted out of {kind}", kind=(kind, person.kind))


def _end(session: Session, instance: Instance, now: datetime) -> None:
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


def _hold_outbound(
    session: Session, contact_id: int, why: str, *, kind: tuple[str, str] | None = None
) -> None:
    """Nothing queued for the contact will go: mark it blocked with the reason.
    ``kind``: (the kind opted out of, the contact's own kind): only what is queued
    to an address of that kind."""
    for message in contact_work.queued_outbound_to(session, contact_id):
        if kind is not None and _kind_of(session, message, kind[1]) != kind[0]:
            continue
        message.status = MessageStatus.BLOCKED.value
        message.last_error = why
        message.next_attempt_at = None


def _kind_of(session: Session, message: Message, own_kind: str) -> str:
    instance = session.get(Instance, message.instance_id) if message.instance_id else None
    rungs = ladder.from_json(instance.ladder) if instance is not None else ()
    return ladder.kind_on(rungs, message.channel or "console", own_kind)


def opt_in(
    person: Contact, now: datetime, *, session: Session | None = None, kind: str | None = None
) -> None:
    """Opt the contact back in: on ``kind`` only, or (None) wholly, every kind with it
    when ``session`` is given."""
    if session is not None:
        contact_addresses.clear_opt_outs(session, person.id, kind)
    if kind is None:
        person.opted_out_at = None
        person.opt_out_reason = None
    person.updated_at = now


def opt_back_in(session: Session, person: Contact, kind: str | None, now: datetime) -> None:
    """A START: the whole contact's opt-out ends, and the one of the kind it came
    from (per-channel scope), or of every kind (None)."""
    if person.opted_out_at is not None:
        opt_in(person, now)
    opt_in(person, now, session=session, kind=kind)


def has_opted_out(session: Session, person: Contact, kind: str | None) -> bool:
    """Whether a START from the contact has something to undo: the whole contact's
    opt-out, or (per-channel scope) the one of the kind it came from."""
    if person.opted_out_at is not None:
        return True
    return kind is not None and kind in contact_addresses.opt_outs_of(session, person.id)


def _unfinished(session: Session, contact_id: int) -> list[Instance]:
    """The contact's non-terminal instances, queued ones first, so that ending
    the live one afterwards promotes nobody into the slot it frees."""
    rows = contact_work.lock_unfinished(session, contact_id)
    queued = [r for r in rows if _waits_in_queue(r)]
    live = [r for r in rows if not _waits_in_queue(r)]
    return queued + live


def _waits_in_queue(instance: Instance) -> bool:
    return waits_in_queue(State(instance.state), transitions.previous_of(instance))
