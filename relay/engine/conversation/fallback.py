"""A conversation with a channel ladder moves to its next channel: the engine's
side of :mod:`relay.core.ladder`.

Three moments move it, each in the transaction of what caused it:

- a message undeliverable on the current channel (the provider failed it, a
  bounce, WhatsApp's closed window without a template): the message goes again
  on the next channel, instead of the conversation going to a person;
- a heartbeat firing after ``fallback_seconds`` of silence since a message first
  went out on the current channel: the follow-up goes on the next channel;
- a reply on another channel of the ladder: the conversation goes on there.

The instance's ``channel`` is the rung in use; every message keeps the channel it
went on, so the transcript shows the way the conversation took. A late or
repeated failure of a rung already left moves nothing (and sends nothing again).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from relay.core import ladder
from relay.core.states import LADDER_STATES, State
from relay.core.values import EventKind
from relay.engine.conversation import transitions
from relay.store import commit_log, contact_addresses, ladder_rows
from relay.store.hotpath.locked_rows import InstanceFields
from relay.store.models import Contact, Message

log = logging.getLogger("relay.fallback")


def after_failure(
    session: Session,
    instance: InstanceFields,
    message: Message,
    reason: str,
    now: datetime,
    actor: str,
) -> bool:
    """``message`` (locked, failed) could not be delivered: True if the conversation
    moved to its next channel and the message goes again there (no person is
    needed); False if it has no ladder, is at its last rung, or the failure is of
    a rung it has left."""
    rungs = ladder.from_json(instance.ladder)
    if not rungs or State(instance.state) not in LADDER_STATES:
        return False
    person = session.get(Contact, message.contact_id)
    if person is not None and (person.undeliverable_at or person.opted_out_at):
        return False  # the contact's mark stops every channel: a person looks at it
    rung = ladder.after_failure(rungs, instance.channel, message.channel)
    rung = _open(session, rungs, rung, person)
    if rung is None:
        return False
    old = _move(session, instance, rung, reason, now, actor)
    again = ladder_rows.send_again(session, message, rung.channel, now)
    commit_log.info(
        session,
        log,
        "message %s undeliverable on %s; sent again on %s as message %s",
        message.id,
        old,
        rung.channel,
        again.id,
        instance_id=instance.id,
    )
    return True


def after_silence(session: Session, instance: InstanceFields, now: datetime) -> bool:
    """A heartbeat fired: True if the contact's silence on the current channel
    moved the conversation to its next one (the follow-up goes there)."""
    rungs = ladder.from_json(instance.ladder)
    if not rungs:
        return False
    wait = (
        timedelta(seconds=instance.fallback_seconds)
        if instance.fallback_seconds is not None
        else None
    )
    went_out = ladder_rows.first_sent_on(session, instance.id, instance.channel)
    replied = ladder_rows.last_reply_at(session, instance.id)
    rung = ladder.after_silence(rungs, instance.channel, went_out, replied, now, wait)
    if rung is None:
        return False
    rung = _open(session, rungs, rung, session.get(Contact, instance.contact_id))
    if rung is None:
        return False
    silent = int((now - max(went_out or now, replied or went_out or now)).total_seconds())
    reason = f"no answer on {instance.channel} for {silent}s"
    _move(session, instance, rung, reason, now, "heartbeat")
    return True


def after_reply(session: Session, instance: InstanceFields, channel: str, now: datetime) -> bool:
    """The contact wrote on ``channel``: True if the conversation moved there."""
    rungs = ladder.from_json(instance.ladder)
    if not rungs:
        return False
    rung = ladder.after_reply(rungs, instance.channel, channel)
    person = session.get(Contact, instance.contact_id)
    if rung is None or _open(session, rungs, rung, person) != rung:
        return False  # not to a kind the contact opted out of: written to there, never
    _move(session, instance, rung, f"the contact wrote on {channel}", now, "contact")
    return True


def leave_kind(
    session: Session, instance: InstanceFields, person: Contact, kind: str, now: datetime
) -> bool:
    """The contact opted out of ``kind`` only: True if the conversation goes on without
    it (it does not write there, or it moved to the next open rung, its queued
    messages with it); False if nothing is left (it ends, as after an opt-out)."""
    rungs = ladder.from_json(instance.ladder)
    if ladder.kind_on(rungs, instance.channel, person.kind) != kind:
        return True
    if State(instance.state).terminal:
        return False
    rung = _open(session, rungs, ladder.next_rung(rungs, instance.channel), person)
    if rung is None:
        return False
    _move(session, instance, rung, f"the contact opted out of {kind}", now, "contact")
    return True


def _open(
    session: Session, rungs: ladder.Ladder, rung: ladder.Rung | None, person: Contact | None
) -> ladder.Rung | None:
    """``rung``, or the first open one below it (per-channel opt-outs)."""
    if rung is None or person is None:
        return rung
    closed = {kind for _, kind in contact_addresses.opted_out_kinds(session, [person.id])}
    return ladder.first_open(rungs, rung, person.kind, closed)


def _move(
    session: Session,
    instance: InstanceFields,
    rung: ladder.Rung,
    reason: str,
    now: datetime,
    actor: str,
) -> str:
    """Put the conversation on ``rung`` (its queued messages with it); the channel it left."""
    old = instance.channel
    instance.channel = rung.channel
    instance.updated_at = now
    ladder_rows.move_queued(session, instance.id, old, rung.channel)
    data = {"from": old, "to": rung.channel, "reason": reason}
    transitions.record(session, EventKind.CHANNEL, instance.id, data, now, actor=actor)
    return old
