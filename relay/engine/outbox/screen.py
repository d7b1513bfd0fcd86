"""The outbox's screen: which leased rows may go now, decided under the lease's locks,
and what becomes of one that does not go (the last section).

Run in the transaction that leases the rows (the outbox claim, or a turn commit
that writes its new rows already leased: :meth:`Dispatcher.lease_new`), and again
under the conversation's lock just before sending each group (on SQLite, not for
a group sent straight after its claim). What may not go is ruled out (:func:`rule`:
opted out, undeliverable, paused, ended, superseded), what a sending window or a
rate limit does not allow yet goes back to the queue with its time, and the rest
becomes what the channel is handed (:class:`Outbound`). The screen also remembers,
for the record of each send, when the message was written (a late delivery moves
the heartbeat) and whether it is its conversation's first.

Asking at the last moment is what makes an acknowledged ``relay cancel`` or
``relay pause`` final: a message written earlier (the rest of a multi-message
turn, a retry waiting out its backoff, a send left ``sending`` by a crashed
daemon) is held or cancelled here instead of reaching the contact afterwards
(a SQLite claim asked a moment before holding the database's write lock:
``relay.engine.outbox.dispatcher.FRESH``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, TypeVar

from sqlalchemy.orm import Session

from relay.channels.base import ChannelError, ContentTemplate, Outbound
from relay.core.errors import RelayError
from relay.core.ladder import from_json, kind_on, rung_of
from relay.core.secrets import mask_text
from relay.core.states import HEARTBEAT_STATE, State, delivers
from relay.core.values import EventKind, MessageStatus
from relay.engine.contacts import optouts, unsubscribe
from relay.engine.conversation import fallback, policy, transitions
from relay.engine.outbox.rates import KEYS, Limits
from relay.engine.runtime import Runtime
from relay.store import aliases, claims, commit_log, contact_addresses, delivery_facts
from relay.store import messages as store_messages
from relay.store.hotpath import locked_rows
from relay.store.hotpath.locked_rows import MessageFields, MessageRow
from relay.store.models import Contact, Message

log = logging.getLogger("relay.outbox")

#: A message the channel is to be handed, and the channel's name.
Ready = tuple[Outbound, str]
#: A delivery later than this after its message was written moves the heartbeat.
LATE = timedelta(seconds=1)


class Verdict(Enum):
    GO = "go"
    #: Not now: the conversation is paused (or still queued); resuming releases it.
    HOLD = "hold"
    #: Never, and not a failure: the conversation moved on without it.
    CANCEL = "cancel"
    #: Never: the contact opted out.
    BLOCK = "block"
    #: Never: the address cannot be reached.
    FAIL = "fail"


@dataclass(frozen=True)
class Ruling:
    verdict: Verdict
    reason: str | None = None


GO = Ruling(Verdict.GO)


@dataclass(frozen=True)
class Facts:
    """What the rules look at, read for a whole batch in three queries."""

    contacts: dict[int, Any]
    instances: dict[str, Any]
    #: The newest inbound message id per instance.
    last_inbound: dict[str, int]
    #: Bound chats: ``{(channel, contact id): address}`` (see ``contact_aliases``).
    aliases: dict[tuple[str, int], str] = field(default_factory=dict)
    #: The addresses of contacts whose conversation has a channel ladder:
    #: ``{(contact id, kind): address}`` (see ``contact_addresses``).
    addresses: dict[tuple[int, str], str] = field(default_factory=dict)
    #: ``{(contact id, kind)}`` the contact opted out of alone (per-channel scope).
    closed: set[tuple[int, str]] = field(default_factory=set)

    def kind(self, channel: str, contact_id: int, instance_id: str | None) -> str:
        """The kind of the contact's address a message on ``channel`` writes to."""
        instance = self.instances.get(instance_id or "")
        rungs = from_json(instance.ladder) if instance is not None else ()
        return kind_on(rungs, channel, str(self.contacts[contact_id].kind))

    def address(self, channel: str, contact_id: int, instance_id: str | None = None) -> str:
        """Where the message goes on ``channel``: the contact's bound chat there, if
        any; else, on a rung of its conversation's ladder, the contact's address of
        the rung's kind; else the contact's own address."""
        bound = self.aliases.get((channel, contact_id))
        if bound:
            return bound
        instance = self.instances.get(instance_id or "")
        rung = rung_of(from_json(instance.ladder), channel) if instance is not None else None
        if rung is not None and rung.kind is not None:
            found = self.addresses.get((contact_id, rung.kind))
            if found:
                return found
        return str(self.contacts[contact_id].address)

    @classmethod
    def read(cls, session: Session, messages: Iterable[MessageFields]) -> Facts:
        rows = list(messages)
        contact_ids = {m.contact_id for m in rows}
        instance_ids = {m.instance_id for m in rows if m.instance_id}
        contacts: dict[int, Any] = {}
        instances: dict[str, Any] = {}
        last_inbound: dict[str, int] = {}
        if contact_ids:
            contacts = delivery_facts.contact_facts(session, contact_ids)
        if instance_ids:
            instances = delivery_facts.instance_facts(session, instance_ids)
            last_inbound = delivery_facts.last_inbound_ids(session, instance_ids)
        pairs = {(m.channel or "console", m.contact_id) for m in rows}
        laddered = {m.contact_id for m in rows if _laddered(instances.get(m.instance_id or ""))}
        return cls(
            contacts,
            instances,
            last_inbound,
            aliases.addresses_for(session, pairs),
            contact_addresses.of_contacts(session, laddered),
            contact_addresses.opted_out_kinds(session, contact_ids),
        )


def _laddered(instance: Any) -> bool:
    return instance is not None and bool(instance.ladder)


def rule(message: MessageFields, facts: Facts) -> Ruling:
    contact = facts.contacts.get(message.contact_id)
    if contact is not None and contact.opted_out_at is not None:
        return Ruling(Verdict.BLOCK, "contact opted out")
    closed = _closed_kind(message, facts) if contact is not None else None
    if closed is not None:
        return Ruling(Verdict.BLOCK, f"contact opted out of {closed}")
    if contact is not None and contact.undeliverable_reason:
        return Ruling(Verdict.FAIL, f"address undeliverable: {contact.undeliverable_reason}")
    instance = facts.instances.get(message.instance_id or "")
    if instance is None:
        return GO
    state = State(instance.state)
    goes = delivers(state)  # a completed conversation's farewell still goes
    if goes is None:
        return Ruling(Verdict.HOLD, f"conversation is {state.value}")
    if not goes:
        return Ruling(Verdict.CANCEL, f"conversation ended ({state.value}) before delivery")
    if message.proactive and facts.last_inbound.get(instance.id, 0) > message.id:
        return Ruling(Verdict.CANCEL, "superseded: the contact wrote after it was written")
    return GO


def _closed_kind(message: MessageFields, facts: Facts) -> str | None:
    """The kind of address the message writes to, if the contact opted out of it alone."""
    if not facts.closed:
        return None
    kind = facts.kind(message.channel or "console", message.contact_id, message.instance_id)
    return kind if (message.contact_id, kind) in facts.closed else None


def apply(message: MessageFields, ruling: Ruling) -> None:
    """Record a ruling other than GO on the (locked) message row."""
    message.last_error = ruling.reason
    message.lease_owner = None
    if ruling.verdict is Verdict.HOLD:
        # Not an attempt; due again when the conversation is resumed.
        message.status = MessageStatus.QUEUED.value
        message.attempts = max(0, message.attempts - 1)
        message.next_attempt_at = None
        return
    message.next_attempt_at = None
    message.status = {
        Verdict.CANCEL: MessageStatus.CANCELLED,
        Verdict.BLOCK: MessageStatus.BLOCKED,
        Verdict.FAIL: MessageStatus.FAILED,
    }[ruling.verdict].value


def rule_out(
    session: Session, message: MessageFields, ruling: Ruling, report: DeliveryReport
) -> None:
    """Record a ruling other than GO on the locked row, and count it."""
    apply(message, ruling)
    if ruling.verdict is Verdict.HOLD:
        report.held += 1
    elif ruling.verdict is Verdict.BLOCK:
        report.blocked += 1
    elif ruling.verdict is Verdict.FAIL:
        report.failed += 1
    else:
        report.cancelled += 1
    commit_log.info(session, log, "message %s not sent: %s", message.id, ruling.verdict.value)


@dataclass(frozen=True)
class Handover:
    """Outbox rows a turn commit wrote leased to a dispatcher and screened in its
    own transaction (:meth:`relay.engine.outbox.dispatcher.Dispatcher.lease_new`), for it
    to send."""

    ready: list[Ready]
    attempts: dict[int, int]
    #: What the screen ruled out or held.
    report: DeliveryReport
    #: Until when the first group may go without a confirming transaction.
    fresh_until: datetime


@dataclass
class Screen:
    relay: Runtime
    #: Whether a channel reads ``Outbound.thread`` (:meth:`Channels.threads`).
    threads: Callable[[str], bool]
    #: Whether it reads ``Outbound.unsubscribe_token`` (:meth:`Channels.links`).
    links: Callable[[str], bool]
    #: Rate limits, domain throttles and warm-up; built for the first channel with any.
    limits: Limits | None = None
    #: Whether each channel has a rate setting (:data:`relay.engine.outbox.rates.KEYS`).
    limited: dict[str, bool] = field(default_factory=dict)
    #: When each screened message was written, until its send is recorded.
    written: dict[int, datetime] = field(default_factory=dict)
    #: Screened messages whose conversation had no delivery yet: recording one as
    #: sent also records the conversation's first delivery (for the funnel).
    firsts: set[int] = field(default_factory=set)

    def __call__(
        self,
        session: Session,
        batch: list[MessageRow],
        now: datetime,
        report: DeliveryReport,
        *,
        counted: bool = False,
    ) -> list[Ready]:
        """Rule out what may not go and hold what a window or rate limit does not allow
        yet; the rest, ready to hand over. ``counted``: screened rows not yet sent
        (so not yet in the store as sent) are counted against the rate limits."""
        # Deliveries of an earlier batch are in the store as sent by now; only
        # this batch's are counted in memory (counting both would hold too many).
        if not counted and self.limits is not None:
            self.limits.reset()
        facts = Facts.read(session, batch)
        threads, links = self._handed(session, batch, facts, now)
        ready = []
        # Conversations with a message held here: their later ones in the batch
        # wait too (due at once, a claim takes them after the held one).
        held: set[str] = set()
        for message in batch:
            ruling = rule(message, facts)
            if ruling.verdict is not Verdict.GO:
                rule_out(session, message, ruling, report)
                continue
            channel = message.channel or "console"
            to = facts.address(channel, message.contact_id)
            later = self._later(session, message, facts, to, now)
            if later is not None or message.instance_id in held:
                claims.unlease_outbox_row(message, later or now)
                if message.instance_id:
                    held.add(message.instance_id)
                report.held += 1
                continue
            if (limits := self.limits_of(channel)) is not None:
                limits.count(channel, to)
            ready.append((_outbound(message, channel, facts, threads, links[channel]), channel))
            self.written[message.id] = message.created_at
            instance = facts.instances.get(message.instance_id or "")
            if instance is not None and instance.first_delivered_at is None:
                self.firsts.add(message.id)
        return ready

    def _handed(
        self, session: Session, batch: list[MessageRow], facts: Facts, now: datetime
    ) -> tuple[dict[str, tuple[str, ...]], dict[str, unsubscribe.UnsubscribeTokens | None]]:
        """What the channels read besides the message: the conversations' threads, and
        the token key of unsubscribe links (asked once per channel, not per message:
        one that cannot be built is built again at every ask)."""
        names = {m.channel or "console" for m in batch}
        reads = {name: self.threads(name) for name in names}
        threaded = {m.instance_id for m in batch if reads[m.channel or "console"]}
        on = {m.instance_id: m.channel or "console" for m in batch if m.instance_id}
        wanted = [i for i in facts.instances if i in threaded]
        threads = store_messages.threads_for(session, wanted, on)
        linked = {name for name in names if self.links(name)}
        tokens = unsubscribe.tokens(session, now) if linked else None
        return threads, {name: tokens if name in linked else None for name in names}

    def _later(
        self, session: Session, message: MessageRow, facts: Facts, to: str, now: datetime
    ) -> datetime | None:
        """When the sending window of a proactive message (:func:`policy.send_opens`) and
        the channel's rate limits allow the message, if not now."""
        contact = facts.contacts.get(message.contact_id)
        later = None
        if message.proactive and contact is not None:
            instance = facts.instances.get(message.instance_id or "")
            config = self.relay.config
            later = policy.send_opens(instance, contact.address, contact.timezone, config, now)
        channel = message.channel or "console"
        limits = self.limits_of(channel)
        if later is None and limits is not None:
            later = limits.hold_until(session, channel, now, to)
        return later

    def limits_of(self, channel: str) -> Limits | None:
        """The limits to ask for ``channel``; None when it has no rate setting."""
        if channel not in self.limited:
            get = self.relay.config.get
            self.limited[channel] = any(get(f"channels.{channel}.{key}") for key in KEYS)
        if self.limited[channel] and self.limits is None:
            self.limits = Limits(self.relay.config)
        return self.limits if self.limited[channel] else None

    def move_heartbeats(self, session: Session, sent: Iterable[tuple[Outbound, datetime]]) -> None:
        """A follow-up's countdown runs from its delivery, not from the decision: a
        message held for hours by a rate limit must not leave the contact hours less
        to answer it. ``sent``: what was delivered, and when."""
        late = {}
        for outbound, at in sent:
            written = self.written.pop(outbound.message_id, None)
            if written is not None and outbound.instance_id and at - written > LATE:
                late[outbound.instance_id] = at - written
        for instance_id, delay in late.items():
            instance = claims.lock_instance(session, instance_id)
            if (
                instance is not None
                and instance.state == HEARTBEAT_STATE.value
                and instance.next_heartbeat_at is not None
            ):
                instance.next_heartbeat_at += delay

    def first_deliveries(self, sent: Iterable[tuple[Outbound, datetime]]) -> dict[str, datetime]:
        """The conversations whose first delivery is among ``sent``, and its time."""
        firsts: dict[str, datetime] = {}
        for outbound, at in sent:
            if outbound.message_id in self.firsts and outbound.instance_id:
                self.firsts.discard(outbound.message_id)
                firsts.setdefault(outbound.instance_id, at)
        return firsts

    def forget(self, message_id: int) -> None:
        """The message failed: no record of its send will ask."""
        self.written.pop(message_id, None)
        self.firsts.discard(message_id)


def _outbound(
    message: MessageFields,
    channel: str,
    facts: Facts,
    threads: dict[str, tuple[str, ...]],
    links: unsubscribe.UnsubscribeTokens | None,
) -> Outbound:
    """What the channel is handed for ``message``: the address it reaches the
    contact at, the thread, the subject, the unsubscribe link and template."""
    instance = facts.instances.get(message.instance_id or "")
    contact = facts.contacts[message.contact_id]
    return Outbound(
        message_id=message.id,
        instance_id=message.instance_id,
        to=facts.address(channel, message.contact_id, message.instance_id),
        text=message.body,
        idempotency_key=message.idempotency_key or str(message.id),
        thread=threads.get(message.instance_id or "", ()),
        subject=instance.subject if instance is not None else None,
        unsubscribe_token=links.make(message.contact_id, message.instance_id) if links else None,
        last_inbound_at=contact.last_inbound_at,
        template=ContentTemplate.from_json(instance and instance.template),
    )


# -- What becomes of a message that does not simply go ------------------------------------
#
# A message the screen rules out is held, blocked, cancelled or failed
# (:func:`rule_out`); one the channel did not take (:func:`attempt`) is retried with
# backoff, held (the provider cannot send at all), blocked (the recipient opted out
# with it), or failed for good and handed to a person (:func:`record_failure`); each
# counted in the pass's :class:`DeliveryReport`. Each runs in the transaction that
# holds the locked outbox row.


_T = TypeVar("_T")


@dataclass
class DeliveryReport:
    """What one delivery pass came to, by outcome (a pulse's report adds them up)."""

    sent: int = 0
    retried: int = 0
    failed: int = 0
    blocked: int = 0
    held: int = 0
    cancelled: int = 0

    def add(self, other: DeliveryReport) -> None:
        for count in fields(self):
            setattr(self, count.name, getattr(self, count.name) + getattr(other, count.name))


@dataclass(frozen=True)
class Failure:
    """Why a send failed, and what the channel advises (see ``ChannelError``)."""

    error: str
    transient: bool
    retry_after: float | None = None
    hold: bool = False
    opted_out: bool = False


@dataclass(frozen=True)
class Retries:
    """How often, and how far apart, a transient failure is tried again."""

    backoff: timedelta
    max_attempts: int


def attempt(call: Callable[[], _T]) -> tuple[_T | None, Failure | None]:
    """Call a channel: (result, None) on success, (None, failure) on failure. A
    channel error says whether a retry may help (and when, and whether to keep
    the message queued); any other relay error will not; an unexpected exception
    (a bug, a dropped connection) might."""
    # The error is stored (last error, transition reason) and printed by show,
    # history and transcript: a secret in a URL or a header it quotes is masked.
    try:
        return call(), None
    except ChannelError as exc:
        error = mask_text(str(exc.message))
        advice = Failure(error, exc.transient, exc.retry_after, exc.hold, exc.opted_out)
        return None, advice
    except RelayError as exc:
        return None, Failure(mask_text(exc.message), False)
    except Exception as exc:
        return None, Failure(mask_text(f"{type(exc).__name__}: {exc}"), True)


def record_failure(
    session: Session,
    message: Message,
    failure: Failure,
    now: datetime,
    report: DeliveryReport,
    retries: Retries,
) -> None:
    """Record a failed attempt on the locked ``message`` (still ours: the caller checked)."""
    message.last_error = failure.error
    if failure.opted_out or failure.hold:
        _refused(session, message, failure, now, report, retries)
    elif failure.transient and message.attempts < retries.max_attempts:
        _retry(message, failure, now, report, retries)
    else:
        _give_up(session, message, failure.error, now, report)


def _retry(
    message: Message, failure: Failure, now: datetime, report: DeliveryReport, retries: Retries
) -> None:
    delay = max(
        retries.backoff * (2 ** (message.attempts - 1)),
        timedelta(seconds=failure.retry_after or 0),
    )
    message.status = MessageStatus.QUEUED.value
    message.next_attempt_at = now + delay
    report.retried += 1
    log.warning(
        "message %s attempt %s failed (%s); retry in %ss",
        message.id,
        message.attempts,
        failure.error,
        int(delay.total_seconds()),
        extra={"instance_id": message.instance_id},
    )


def _give_up(
    session: Session, message: Message, error: str, now: datetime, report: DeliveryReport
) -> None:
    message.status = MessageStatus.FAILED.value
    message.next_attempt_at = None
    report.failed += 1
    data = {"message_id": message.id, "error": error, "attempts": message.attempts}
    transitions.record(session, EventKind.FAILED, message.instance_id, data, now)
    log.error(
        "message %s failed after %s attempt(s): %s",
        message.id,
        message.attempts,
        error,
        extra={"instance_id": message.instance_id},
    )
    _escalate(session, message, error, now)


def _refused(
    session: Session,
    message: Message,
    failure: Failure,
    now: datetime,
    report: DeliveryReport,
    retries: Retries,
) -> None:
    """The provider refused for a reason that is not the message's: the
    recipient opted out with it (the contact is opted out, as by a STOP), or
    the channel cannot send at all (bad credentials: the message waits,
    queued, without using up an attempt, until a person fixes it)."""
    if failure.opted_out:
        person = session.get(Contact, message.contact_id)
        assert person is not None
        optouts.opt_out(session, person, now, reason=f"provider: {failure.error}")
        message.status = MessageStatus.BLOCKED.value
        message.next_attempt_at = None
        report.blocked += 1
        log.warning("message %s: contact opted out (%s)", message.id, failure.error)
        return
    wait = max(retries.backoff, timedelta(seconds=failure.retry_after or 0))
    claims.unlease_outbox_row(message, now + wait)
    report.held += 1
    log.error("message %s stays queued: %s", message.id, failure.error)


def _escalate(session: Session, message: Message, error: str, now: datetime) -> None:
    """A message that cannot be delivered needs a person (or the next channel)."""
    if message.instance_id is None:
        return
    instance = claims.lock_instance(session, message.instance_id)
    if instance is None:
        return
    reason = f"delivery of message {message.id} failed: {error}"
    # With a channel ladder, the message goes again on the next channel instead.
    if not fallback.after_failure(session, instance, message, reason, now, "dispatcher"):
        transitions.hand_to_human(session, instance, reason, now=now, actor="dispatcher")


def put_back(
    session: Session, message_ids: Sequence[int], attempts: Mapping[int, int], now: datetime
) -> int:
    """Return claimed messages unsent to the outbox, due now, their attempt not
    counted; how many. They were behind a message of their conversation that
    failed in the same batch, or that another worker took over: they go after it
    (a claim takes no message while an earlier one of its conversation is backing
    off or being sent). A row another worker has taken over meanwhile (its attempt
    differs) is left to it."""
    locked = claims.lock_messages(session, list(message_ids))
    ours = [row for row in locked.values() if claims.still_leased(row, attempts[row.id])]
    for row in ours:
        claims.unlease_outbox_row(row, now)
    locked_rows.write(session, ours)
    return len(ours)
