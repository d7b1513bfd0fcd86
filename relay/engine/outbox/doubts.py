"""Is a claimed message still this dispatcher's to send? Asked of a group just
before its sends (:func:`confirm`), and, after a crash, of a message left
``sending`` (:class:`Doubts`; :mod:`relay.channels.fate` says why).

A batch is delivered one message after another; when the channel is slow, the
lease on rows further down can run out and another worker claims them again
(its claim counts one more attempt). Those are its to send now. The lease is
renewed for the send itself, and the opt-out is checked again, at delivery time
rather than when the batch was claimed.

A dispatcher leases the messages whose sender died (``store.doubts``), asks
each one's channel outside any transaction, and settles it in one more:

- the provider has it: recorded ``sent`` (with the provider's id), never sent again;
- the provider has not: ``queued`` again, due at once, and sent by the next claim
  (which checks the conversation and the contact first, as every claim does);
- nobody can tell: ``queued`` again when the channel declares a second hand-over
  safe (``resend_safe``) or the operator allows it (``[outbox] resend_unknown``),
  else its fate is ``unknown``: ``relay doctor`` lists it and ``relay retry``
  sends it again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from relay.channels.base import Outbound
from relay.channels.fate import Fate, Reconciled, reconcile, resend_safe
from relay.core.values import EventKind
from relay.engine.conversation import transitions
from relay.engine.outbox import screen
from relay.engine.outbox.screen import DeliveryReport
from relay.engine.runtime import Channels, Runtime
from relay.store import claims, commit_log, doubts, funnel
from relay.store import outbox as outbox_rows
from relay.store.hotpath import locked_rows

log = logging.getLogger("relay.outbox")

#: The provider is asked about messages handed over from this long before the
#: message was written (clocks of two machines differ a little).
CLOCK_SLACK = timedelta(minutes=1)


@dataclass(frozen=True)
class Doubt:
    """A message leased by :meth:`Doubts.take`, to ask its channel about."""

    outbound: Outbound
    channel: str
    #: The lease this dispatcher took on the row to ask about it.
    lease_until: datetime
    written: datetime
    #: Provider ids relay recorded for other messages to the same recipient on the
    #: channel: a listed message with one of them is not this one.
    taken: frozenset[str] = frozenset()


@dataclass
class Doubts:
    relay: Runtime
    channels: Channels
    owner: str | None

    def settle(
        self,
        lease: timedelta,
        limit: int,
        report: DeliveryReport,
        *,
        message_id: int | None = None,
        instance_id: str | None = None,
    ) -> bool:
        """Ask about and settle up to ``limit`` messages whose sender died (those of
        ``message_id``'s conversation, or of ``instance_id``), taken in a transaction
        of their own. Whether any went back to the outbox."""
        with self.relay.store.transaction() as session:
            asked = self.take(session, lease, limit, message_id=message_id, instance_id=instance_id)
        return self.resolve(asked, report)

    def take(
        self,
        session: Session,
        lease: timedelta,
        limit: int,
        *,
        message_id: int | None = None,
        instance_id: str | None = None,
    ) -> list[Doubt]:
        """Lease up to ``limit`` messages whose sender died, in the caller's
        transaction (a claim's: one statement more when there are none), for
        :meth:`resolve` to ask about once it has committed."""
        now = self.relay.now()
        rows = doubts.claim_in_doubt(
            session, now, lease, limit, self.owner, message_id=message_id, instance_id=instance_id
        )
        return leased(session, rows, now + lease)

    def resolve(self, asked: list[Doubt], report: DeliveryReport) -> bool:
        """Ask the channels about what :meth:`take` leased, outside any transaction,
        and settle it in one. Whether any went back to the outbox (due at once: a
        second claim may send it)."""
        if not asked:
            return False
        answers = []
        found: set[str] = set()  # two doubts with one text: one listed message each
        for doubt in asked:
            answer, allowed = self._ask(doubt, doubt.taken | found)
            if answer.fate is Fate.SENT and answer.provider_id:
                found.add(answer.provider_id)
            answers.append((doubt, (answer, allowed)))
        with self.relay.store.transaction() as session:
            return self._record(session, answers, report) > 0

    def _ask(self, doubt: Doubt, taken: frozenset[str]) -> tuple[Reconciled, bool]:
        """The channel's answer, and whether a second hand-over is allowed."""
        try:
            channel = self.channels.get(doubt.channel)
        except Exception as exc:
            return Reconciled(Fate.UNKNOWN, detail=f"channel {doubt.channel}: {exc}"), False
        answer = reconcile(channel, doubt.outbound, doubt.written - CLOCK_SLACK, taken)
        allowed = resend_safe(channel) or self.relay.config.settings.outbox.resend_unknown
        return answer, allowed

    def _record(
        self,
        session: Session,
        answers: list[tuple[Doubt, tuple[Reconciled, bool]]],
        report: DeliveryReport,
    ) -> int:
        """Settle each answer while the row is still ours; how many went back."""
        now = self.relay.now()
        requeued = 0
        # Conversations first, then messages: the order every command locks in.
        owners = sorted({d.outbound.instance_id for d, _ in answers if d.outbound.instance_id})
        claims.lock_instance_rows(session, owners)
        locked = claims.lock_messages(session, [d.outbound.message_id for d, _ in answers])
        for doubt, (answer, allowed) in answers:
            message = locked.get(doubt.outbound.message_id)
            if message is None or not doubts.still_ours(message, doubt.lease_until):
                continue
            ids = (doubt.outbound.message_id, doubt.outbound.to, doubt.channel)
            if answer.fate is Fate.SENT:
                pid = answer.provider_id or message.provider_message_id or ""
                outbox_rows.record_sent(session, [(message.id, pid, now)])
                data = {"message_id": message.id, "channel": doubt.channel, "reconciled": True}
                transitions.record(session, EventKind.SENT, message.instance_id, data, now)
                if message.instance_id:  # a no-op unless it was the conversation's first
                    funnel.record_first_deliveries(session, {message.instance_id: now})
                commit_log.info(session, log, "message %s to %s: %s has it, not sent again", *ids)
                report.sent += 1
            elif answer.fate is Fate.NOT_SENT or allowed:
                doubts.settle_again(message, now)
                requeued += 1
                why = "did not get it" if answer.fate is Fate.NOT_SENT else "may get it twice"
                commit_log.info(session, log, "message %s to %s: %s " + why + ", sent again", *ids)
            else:
                doubts.settle_unknown(message, answer.detail or "the channel cannot tell")
                commit_log.warning(
                    session,
                    log,
                    "message %s to %s: fate unknown on %s (%s); `relay retry %s` sends it again",
                    *ids,
                    answer.detail,
                    message.id,
                )
        locked_rows.write(session, locked.values())
        return requeued


def leased(session: Session, rows: list[Any], until: datetime) -> list[Doubt]:
    """The messages :func:`relay.store.doubts.claim_in_doubt` leased until ``until``,
    as doubts to ask their channels about (none: no query)."""
    if not rows:
        return []
    facts = screen.Facts.read(session, rows)
    since = min(row.created_at for row in rows) - CLOCK_SLACK
    taken = doubts.recorded_elsewhere(session, rows, since)
    return [
        Doubt(
            Outbound(
                message_id=row.id,
                instance_id=row.instance_id,
                to=facts.address(row.channel or "console", row.contact_id),
                text=row.body,
                idempotency_key=row.idempotency_key or str(row.id),
            ),
            row.channel or "console",
            until,
            row.created_at,
            taken[(row.contact_id, row.channel or "console")],
        )
        for row in rows
    ]


def confirm(
    relay: Runtime,
    group: list[tuple[Outbound, str]],
    claimed: dict[int, int],
    lease: timedelta,
    report: DeliveryReport,
    stalled: set[str],
) -> list[tuple[Outbound, str]]:
    """The messages of ``group`` still ours (``claimed``: the attempt each claim
    counted) that may still go, their leases renewed for ``lease``. Those ruled
    out are recorded; the conversations of those taken over join ``stalled``."""
    confirmed = []
    with relay.store.transaction() as session:
        ids = [o.message_id for o, _ in group]
        # Instances first, then messages: the order every command locks in.
        owners = sorted({o.instance_id for o, _ in group if o.instance_id})
        claims.lock_instance_rows(session, owners)
        locked = claims.lock_messages(session, ids)
        facts = screen.Facts.read(session, locked.values())
        renewed = relay.now() + lease
        for outbound, channel_name in group:
            message = locked.get(outbound.message_id)
            if message is None or not claims.still_leased(message, claimed[outbound.message_id]):
                log.info("message %s was taken over by another worker", outbound.message_id)
                if outbound.instance_id:
                    stalled.add(outbound.instance_id)
                continue
            ruling = screen.rule(message, facts)
            if ruling.verdict is not screen.Verdict.GO:
                screen.rule_out(session, message, ruling, report)
                continue
            message.next_attempt_at = renewed
            confirmed.append((outbound, channel_name))
        locked_rows.write(session, locked.values())
    return confirmed
