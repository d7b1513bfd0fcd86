"""Inbound: store at once, route to its conversation, honour opt-outs and receipts.

Whatever state the contact's instance is in, the message is committed the
moment it arrives, whatever it holds (long text is cut with a note, a sender
that is no address is kept aside, and what cannot be stored is kept aside as a
rejected arrival with the reason: the last section). A message the instance cannot take yet
(paused, waiting for a human, mid-follow-up) stays ``received`` and is
answered when the state allows (``transitions.apply_event`` re-checks on
entering WAITING_FOR_REPLY). One that arrives after its conversation ended is
kept on that conversation, marked late, and shown by ``show`` and ``status``.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from typing import TypeVar

from sqlalchemy.orm import Session

from relay.channels.base import Inbound, Incoming, Receipt, Rejected
from relay.core import optout_scope
from relay.core.clock import isoformat
from relay.core.errors import InvalidInput
from relay.core.intents import Intent, Label
from relay.core.optout import OPT_IN_WORDS, OPT_OUT_WORDS, is_opt_in, is_opt_out
from relay.core.states import PAUSED_STATE, TAKES_REPLIES, Event, State
from relay.core.storable import storable, storable_or_none
from relay.core.values import (
    Author,
    DeliveryStatus,
    Direction,
    EventKind,
    InboundKind,
    MessageStatus,
)
from relay.engine.contacts import optouts, unsubscribe
from relay.engine.contacts.addresses import Address, bind, contact_for_arrival
from relay.engine.contacts.bounce_marks import (
    DEFAULT_SOFT_BOUNCES,
    SoftBounces,
    record_bounce,
)
from relay.engine.contacts.optouts import opt_out
from relay.engine.conversation import fallback, transitions
from relay.engine.inbound import receipt_order
from relay.store import arrivals, claims, failures, funnel, instances, on_commit
from relay.store.models import Contact, InboundReject, Instance, Message

log = logging.getLogger("relay.inbound")

#: Inbound text longer than this is cut (and the cut noted on the row): an email
#: with its whole quoted history can be long, but never needs to be unbounded.
MAX_INBOUND = 100_000
#: ``messages.provider_message_id`` is a VARCHAR(255).
MAX_PROVIDER_ID = 255
MAX_SENDER = 1000
MAX_REJECTED = 1_100_000

T = TypeVar("T")


Words = str | Sequence[str]


@dataclass(frozen=True)
class Keywords:
    opt_out: tuple[str, ...] = OPT_OUT_WORDS
    opt_in: tuple[str, ...] = OPT_IN_WORDS
    #: ``[compliance] optout_scope``: ``channel``: a STOP stops the kind of address
    #: it came from only (:mod:`relay.core.optout_scope`).
    scope: str = optout_scope.CONTACT
    #: ``[intent] opt_out``: a reply the classifier labels ``opt_out`` opts out too.
    intent_opts_out: bool = True

    @classmethod
    def from_config(cls, out: Words, into: Words, scope: str, intent: bool = True) -> Keywords:
        return cls(_words(out) or OPT_OUT_WORDS, _words(into) or OPT_IN_WORDS, scope, intent)

    def kind(self, arrival: Arrival) -> str | None:
        """The kind an opt-out said in ``arrival`` stops (None: the whole contact)."""
        return arrival.address.kind if self.scope == optout_scope.CHANNEL else None


def opts_out(kind: InboundKind, text: str, keywords: Keywords) -> bool:
    """Whether an inbound message opts its sender out: a complaint, an unsubscribe,
    or an opt-out word (what :func:`store_arrival` acts on)."""
    return kind in (InboundKind.COMPLAINT, InboundKind.UNSUBSCRIBE) or is_opt_out(
        text, keywords.opt_out
    )


def _words(value: str | Sequence[str]) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    return tuple(w.strip().upper() for w in items if str(w).strip())


LATE = "arrived after the conversation ended"


@dataclass
class IngestReport:
    """What one poll or one pushed request brought in, once stored."""

    stored: int = 0
    duplicates: int = 0
    rejected: int = 0
    receipts: int = 0
    unmatched_receipts: int = 0
    #: Chats bound to contacts by a deep link's ``/start <token>`` (not stored as replies).
    bound: int = 0
    messages: list[Message] = field(default_factory=list)
    #: Contacts opted out by what arrived (a STOP, an unsubscribe, a complaint), and when.
    opted_out: list[tuple[int, datetime]] = field(default_factory=list)


@dataclass(frozen=True)
class Arrival:
    """One inbound message as the engine takes it: the channel's Inbound with the
    sender already resolved to a contact address."""

    address: Address
    text: str
    channel: str
    provider_message_id: str | None = None
    references: tuple[str, ...] = ()
    kind: InboundKind = InboundKind.MESSAGE
    raw: str | None = None
    resume_at: datetime | None = None
    intent: Intent | None = None


def ingest(
    session: Session,
    channel: str,
    incoming: Incoming,
    now: datetime,
    *,
    resolve: Callable[[str], Address],
    keywords: Keywords = Keywords(),
    careful: bool = False,
    bounces: SoftBounces = DEFAULT_SOFT_BOUNCES,
) -> IngestReport:
    """Store everything a channel brought in, in the caller's one transaction.

    ``careful``: each item in a savepoint, one that cannot be stored kept aside
    as rejected (see "No poison pill" below), so it never holds back the rest.
    """
    report = IngestReport()
    for item in map(_clean, incoming.messages):
        take = partial(_take, session, channel, item, now, resolve, keywords, report)
        _, ok = _isolated(session, take, partial(_of_inbound, item), careful, channel, now)
        report.rejected += 0 if ok else 1
    for receipt in map(_clean_receipt, incoming.receipts):
        apply = partial(apply_receipt, session, channel, receipt, now, bounces=bounces)
        applied, ok = _isolated(
            session, apply, partial(_of_receipt, receipt), careful, channel, now
        )
        report.receipts += 1 if applied else 0
        report.unmatched_receipts += 1 if ok and not applied else 0
        report.rejected += 0 if ok else 1
    for rejected in incoming.rejected:
        _keep_aside(session, channel, rejected, now)
        report.rejected += 1
    report.opted_out = on_commit.collected(session, optouts.NEWLY_OUT)
    return report


def _take(
    session: Session,
    channel: str,
    item: Inbound,
    now: datetime,
    resolve: Callable[[str], Address],
    keywords: Keywords,
    report: IngestReport,
) -> None:
    """Store one inbound item (or bind a chat, or keep aside an unusable sender)."""
    if bind(session, channel, item, now, resolve):
        report.bound += 1
        return
    try:
        address = resolve(item.sender)
    except InvalidInput as exc:
        _reject_sender(session, channel, item, exc.message, now)
        report.rejected += 1
        return
    arrival = Arrival(
        address,
        item.text,
        channel,
        item.provider_message_id,
        tuple(item.references),
        InboundKind(item.kind),
        item.raw,
        item.resume_at,
        item.intent,
    )
    message = store_arrival(session, arrival, now, keywords=keywords)
    if message is None:
        report.duplicates += 1
    else:
        report.stored += 1
        report.messages.append(message)


def store_arrival(
    session: Session, arrival: Arrival, now: datetime, *, keywords: Keywords = Keywords()
) -> Message | None:
    """Store one inbound message and apply what it means; None if already stored."""
    if arrival.provider_message_id:
        stored = arrivals.inbound_by_provider_id(
            session, arrival.channel, arrival.provider_message_id
        )
        if stored is not None:
            _seen_again(session, stored, arrival, now, keywords)
            return None
    person = contact_for_arrival(session, arrival.channel, arrival.address, now)
    person.last_inbound_at = now
    body, note = _bounded(arrival.text)
    instance, late = _route(session, person, arrival.references)
    message = Message(
        instance_id=instance.id if instance else None,
        contact_id=person.id,
        direction=Direction.INBOUND.value,
        author=Author.CONTACT.value,
        body=body,
        status=MessageStatus.RECEIVED.value,
        channel=arrival.channel,
        kind=arrival.kind.value,
        provider_message_id=arrival.provider_message_id,
        refs="\n".join(arrival.references) or None,
        raw=arrival.raw,
        note="; ".join(n for n in (note, LATE if late else None) if n) or None,
        intent=arrival.intent.label.value if arrival.intent else None,
        intent_date=arrival.intent.day if arrival.intent else None,
        attempts=0,
        created_at=now,
    )
    session.add(message)
    if instance is not None and arrival.kind is InboundKind.MESSAGE:
        funnel.note_reply(instance, now)
    session.flush()
    data = {"message_id": message.id, "channel": message.channel, "kind": message.kind}
    transitions.record(session, EventKind.RECEIVED, message.instance_id, data, now)
    # A late message still opts the contact out or in; it starts nothing.
    _apply_meaning(session, person, message, None if late else instance, arrival, now, keywords)
    if late and message.status == MessageStatus.RECEIVED.value:
        log.warning(
            "message %s from a contact %s (instance %s)",
            message.id,
            LATE,
            message.instance_id,
            extra={"instance_id": message.instance_id},
        )
    return message


def _seen_again(
    session: Session, stored: Message, arrival: Arrival, now: datetime, keywords: Keywords
) -> None:
    """A message stored already: a one-click unsubscribe used again opts out again."""
    if arrival.kind is InboundKind.UNSUBSCRIBE and arrival.provider_message_id:
        pid, channel = arrival.provider_message_id, arrival.channel
        scoped = partial(opt_out, kind=keywords.kind(arrival))
        unsubscribe.used_again(session, stored.contact_id, pid, channel, now, scoped)


def _apply_meaning(
    session: Session,
    person: Contact,
    message: Message,
    instance: Instance | None,
    arrival: Arrival,
    now: datetime,
    keywords: Keywords,
) -> None:
    if arrival.kind is InboundKind.COMPLAINT:
        # An abuse report (ARF) naming the contact: never a reply, always an opt-out
        # of the whole contact, whatever the scope.
        _processed(message, now)
        opt_out(session, person, now, reason="complaint")
        return
    kind = keywords.kind(arrival)
    rules = opts_out(arrival.kind, message.body, keywords)
    if rules or _intent_opt_out(arrival, keywords):
        _processed(message, now)
        why = f"{arrival.kind.value if rules else 'intent opt_out'} on {arrival.channel}"
        opt_out(session, person, now, reason=why, kind=kind)
        return
    if arrival.kind is InboundKind.AUTO_REPLY:
        # Never answered (no mail loops), never a reply (the follow-up count stays).
        _processed(message, now)
        if instance is not None and arrival.resume_at is not None and arrival.resume_at > now:
            _pause_until(session, instance, arrival.resume_at, now)
        return
    if is_opt_in(message.body, keywords.opt_in) and optouts.has_opted_out(session, person, kind):
        _processed(message, now)
        optouts.opt_back_in(session, person, kind, now)
        return
    if instance is not None and instance.ladder:
        fallback.after_reply(session, instance, arrival.channel, now)  # answered where they wrote
    if instance is not None and State(instance.state) in TAKES_REPLIES:
        transitions.apply_event(session, instance, Event.CONTACT_REPLIES, now=now, actor="contact")


def _intent_opt_out(arrival: Arrival, keywords: Keywords) -> bool:
    """Whether the classifier's label opts out where no rule did (``[intent] opt_out``);
    never over the rules' opt-in word."""
    said = arrival.intent is not None and arrival.intent.label is Label.OPT_OUT
    return said and keywords.intent_opts_out and not is_opt_in(arrival.text, keywords.opt_in)


def _route(
    session: Session, person: Contact, references: tuple[str, ...]
) -> tuple[Instance | None, bool]:
    """(the conversation the message belongs to, whether that one has ended).

    The thread a reply answers wins over the sender's live conversation (a
    contact answering an old email thread); then the conversation holding the
    contact's slot; then, when none is live, the contact's last conversation, so
    that a reply after the end is seen on it rather than lost among the unrouted.
    """
    holder = instances.slot_holder(session, person.id, lock=True)
    answered = arrivals.instance_answered_by(session, references)
    if answered is not None and (holder is None or holder.id != answered):
        instance = claims.lock_instance(session, answered)
        if instance is not None and instance.contact_id == person.id:
            return instance, State(instance.state).terminal
    if holder is not None:
        return holder, False
    last = arrivals.latest_instance(session, person.id)
    if last is not None and State(last.state).terminal:
        return last, True
    return None, False


def _pause_until(session: Session, instance: Instance, until: datetime, now: datetime) -> None:
    if instance.state == PAUSED_STATE.value or State(instance.state).terminal:
        return
    transitions.apply_event(
        session,
        instance,
        Event.PAUSE,
        now=now,
        actor="contact",
        reason=f"auto-reply: away until {isoformat(until)}",
    )
    instance.paused_until = until


def apply_receipt(
    session: Session,
    channel: str,
    receipt: Receipt,
    now: datetime,
    *,
    bounces: SoftBounces = DEFAULT_SOFT_BOUNCES,
) -> bool:
    """Record what the provider says of one of our messages; False if it is not ours.

    A failure fails the message and hands its conversation to a person; its
    contact is marked undeliverable when the address is dead or soft bounces
    pile up (:mod:`relay.engine.contacts.bounce_marks`). An abuse complaint about a
    delivered message opts the contact out (reason ``complaint``)."""
    message = arrivals.outbound_by_provider_id(session, channel, receipt.provider_message_id)
    if message is None:
        log.info("receipt for unknown message %s on %s", receipt.provider_message_id, channel)
        return False
    status = DeliveryStatus(receipt.status)
    moved = receipt_order.record(message, status, receipt.at, now)
    person = session.get(Contact, message.contact_id)
    assert person is not None
    if receipt.opted_out and not status.failed:  # a complaint about a delivered message
        opt_out(session, person, now, reason=receipt.reason or "complaint")
        return True
    if not moved or not status.failed:
        return True
    message.status = MessageStatus.FAILED.value
    message.next_attempt_at = None
    message.last_error = receipt.error or status.value
    reason = f"message {message.id} {status.value}: {receipt.error or 'no reason given'}"
    if receipt.opted_out:
        opt_out(session, person, now, reason=f"provider: {reason}")
        return True
    record_bounce(session, person, message, receipt, reason, now, bounces)
    if message.instance_id is not None:
        instance = claims.lock_instance(session, message.instance_id)
        if instance is not None:
            funnel.forget_delivery(session, instance)
            # With a channel ladder, the message goes again on the next channel instead.
            if not fallback.after_failure(session, instance, message, reason, now, channel):
                transitions.hand_to_human(session, instance, reason, now=now, actor=channel)
    return True


def _processed(message: Message, now: datetime) -> None:
    message.status = MessageStatus.PROCESSED.value
    message.processed_at = now


# -- No poison pill: what cannot be stored is kept aside ----------------------------------
#
# Everything an arrival carries is made storable first (:mod:`relay.core.storable`:
# no NUL, no lone surrogate, a provider id a column holds), so the usual case stores
# in one transaction. Should storing still fail for a reason that is about the data
# (not the database being away), :func:`relay.engine.verbs.incoming.ingest` stores the
# batch again item by item (``careful``), each in a savepoint: an item that fails again
# is recorded as a rejected arrival (``relay inbox --kind rejected``) with the reason, in
# the same transaction that moves the channel's position past it, and the items after it
# are stored as usual.


def provider_id(value: str | None) -> str | None:
    """A provider id a column holds: cleaned, and a long one cut with a digest of the
    whole (so that two long ids never become one)."""
    if value is None:
        return None
    value = storable(value)
    if len(value) <= MAX_PROVIDER_ID:
        return value
    digest = hashlib.sha256(value.encode("utf-8")).hexdigest()[:32]
    return f"{value[: MAX_PROVIDER_ID - 34]}#{digest}"


def _clean(item: Inbound) -> Inbound:
    """``item`` with every text a column can hold (the raw message kept as it came)."""
    return replace(
        item,
        sender=storable(item.sender),
        text=storable(item.text),
        provider_message_id=provider_id(item.provider_message_id),
        references=tuple(r for r in (provider_id(r) for r in item.references) if r),
        raw=storable_or_none(item.raw),
        bind_token=storable_or_none(item.bind_token),
    )


def _clean_receipt(receipt: Receipt) -> Receipt:
    return replace(
        receipt,
        provider_message_id=provider_id(receipt.provider_message_id) or "",
        error=storable_or_none(receipt.error),
    )


def _keep_aside(session: Session, channel: str, item: Rejected, now: datetime) -> None:
    """Keep ``item`` aside as a rejected arrival, with its reason."""
    session.add(
        InboundReject(
            channel=channel,
            sender=storable(item.sender)[:MAX_SENDER] or "unknown",
            body=storable(item.raw)[:MAX_REJECTED],
            provider_message_id=provider_id(item.provider_message_id),
            error=storable(item.reason)[:2000],
            created_at=now,
        )
    )
    log.warning("inbound on %s kept aside: %s", channel, item.reason)


def _of_inbound(item: Inbound, exc: BaseException) -> Rejected:
    return Rejected(
        reason=f"could not be stored: {failures.kind(exc)}: {_short(exc)}",
        raw=item.raw or item.text,
        sender=item.sender,
        provider_message_id=item.provider_message_id,
    )


def _of_receipt(receipt: Receipt, exc: BaseException) -> Rejected:
    return Rejected(
        reason=f"receipt ({receipt.status}) could not be stored: {failures.kind(exc)}: "
        f"{_short(exc)}",
        raw=repr(receipt),
        provider_message_id=receipt.provider_message_id,
    )


def _isolated(
    session: Session,
    step: Callable[[], T],
    rejected: Callable[[BaseException], Rejected],
    careful: bool,
    channel: str,
    now: datetime,
) -> tuple[T | None, bool]:
    """Run ``step``: (its result, True). ``careful``: in a savepoint, and when it
    fails for a reason that is about the data, (None, False) with the item kept
    aside; an outage or a lock is raised (nothing is kept aside for it)."""
    if not careful:
        return step(), True
    try:
        with session.begin_nested():
            return step(), True
    except Exception as exc:
        if failures.is_transient(exc):
            raise
        _keep_aside(session, channel, rejected(exc), now)
        return None, False


def _reject_sender(
    session: Session, channel: str, item: Inbound, error: str, now: datetime
) -> None:
    """A sender that is no address cannot become a contact: kept aside, logged, counted."""
    body, _ = _bounded(item.text)
    session.add(
        InboundReject(
            channel=channel,
            sender=item.sender[:1000],
            body=body,
            provider_message_id=item.provider_message_id,
            error=error,
            created_at=now,
        )
    )
    log.warning("inbound on %s from an unusable sender kept aside: %s", channel, error)


def _bounded(text: str) -> tuple[str, str | None]:
    """The text a row can hold (PostgreSQL text cannot hold NUL) and what was done to it."""
    body = (text or "").replace("\x00", "")
    if len(body) > MAX_INBOUND:
        return body[:MAX_INBOUND], f"truncated from {len(body)} characters"
    if not body.strip():
        return body, "empty message"
    return body, None


def _short(exc: BaseException) -> str:
    text = " ".join(str(getattr(exc, "orig", None) or exc).split())
    return text[:300] or type(exc).__name__
