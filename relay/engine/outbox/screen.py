"""The outbox's screen: which leased rows may go now, decided under the lease's locks.

Run in the transaction that leases the rows: the outbox claim, or a turn
commit that writes its new rows already leased (:meth:`Dispatcher.lease_new`).
What may not go is ruled out (:mod:`relay.engine.outbox.gate`), what a sending window
or a rate limit does not allow yet goes back to the queue with its time, and
the rest becomes what the channel is handed (:class:`Outbound`). The screen
also remembers, for the record of each send, when the message was written (a
late delivery moves the heartbeat) and whether it is its conversation's first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from relay.channels.base import ContentTemplate, Outbound
from relay.core.states import HEARTBEAT_STATE
from relay.engine.contacts import unsubscribe
from relay.engine.outbox import gate
from relay.engine.outbox import outcomes as delivery_outcomes
from relay.engine.outbox.mail_limits import MailLimits
from relay.engine.outbox.outcomes import DeliveryReport
from relay.engine.outbox.rates import RateLimits
from relay.store import claims, queries
from relay.store.locked_rows import MessageFields, MessageRow

if TYPE_CHECKING:
    from relay.engine.runtime import Runtime

#: A message the channel is to be handed, and the channel's name.
Ready = tuple[Outbound, str]
#: A delivery later than this after its message was written moves the heartbeat.
LATE = timedelta(seconds=1)


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
    limits: RateLimits = field(init=False)
    #: Per-domain throttles and warm-up ramps of email channels.
    mail: MailLimits = field(init=False)
    #: When each screened message was written, until its send is recorded.
    written: dict[int, datetime] = field(default_factory=dict)
    #: Screened messages whose conversation had no delivery yet: recording one as
    #: sent also records the conversation's first delivery (for the funnel).
    firsts: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.limits = RateLimits(self.relay.config)
        self.mail = MailLimits(self.relay.config)

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
        if not counted:
            self._reset()
        facts = gate.Facts.read(session, batch)
        # Asked once per channel, not per message (a channel that cannot be built is
        # built again at every ask).
        reads = {name: self.threads(name) for name in {m.channel or "console" for m in batch}}
        threaded = {m.instance_id for m in batch if reads[m.channel or "console"]}
        on = {m.instance_id: m.channel or "console" for m in batch if m.instance_id}
        threads = queries.threads_for(session, [i for i in facts.instances if i in threaded], on)
        links = unsubscribe.tokens(session, now)
        ready = []
        # Conversations with a message held here: their later ones in the batch
        # wait too (due at once, a claim takes them after the held one).
        held: set[str] = set()
        for message in batch:
            ruling = gate.rule(message, facts)
            if ruling.verdict is not gate.Verdict.GO:
                delivery_outcomes.rule_out(session, message, ruling, report)
                continue
            channel = message.channel or "console"
            to = facts.address(channel, message.contact_id)
            later = gate.window_opens(message, facts, self.relay.config, now)
            later = later or self._limit(session, channel, to, now)
            if later is not None or message.instance_id in held:
                claims.unlease_outbox_row(message, later or now)
                if message.instance_id:
                    held.add(message.instance_id)
                report.held += 1
                continue
            self._count(channel, to)
            ready.append((_outbound(message, channel, facts, threads, links), channel))
            self.written[message.id] = message.created_at
            instance = facts.instances.get(message.instance_id or "")
            if instance is not None and instance.first_delivered_at is None:
                self.firsts.add(message.id)
        return ready

    def _limit(self, session: Session, channel: str, to: str, now: datetime) -> datetime | None:
        """When the channel's rate limits, domain throttles and warm-up allow one more."""
        return self.limits.hold_until(session, channel, now) or self.mail.hold_until(
            session, channel, now, to
        )

    def _count(self, channel: str, to: str) -> None:
        self.limits.count(channel)
        self.mail.count(channel, to)

    def _reset(self) -> None:
        self.limits.reset()
        self.mail.reset()

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
    facts: gate.Facts,
    threads: dict[str, tuple[str, ...]],
    links: unsubscribe.UnsubscribeTokens,
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
        unsubscribe_token=links.make(message.contact_id, message.instance_id),
        last_inbound_at=contact.last_inbound_at,
        template=ContentTemplate.from_json(instance and instance.template),
    )
