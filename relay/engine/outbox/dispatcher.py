"""The dispatcher: delivers outbox rows through channels, at most once each.

A row is leased and marked ``sending`` (attempt counted) in one transaction
(a claim, or the turn commit that writes it: :meth:`Dispatcher.lease_new`),
the channel is called outside any transaction, and the result is written in
another. A crash between the call and the write leaves the row ``sending``;
when its lease runs out its channel is asked what became of it before it is
sent again (:mod:`relay.engine.outbox.doubts`). The contact's opt-out is
checked again at delivery time, not only when the message was written.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from relay.channels.base import Outbound, batch_sender
from relay.core.values import EventKind
from relay.engine.conversation import transitions
from relay.engine.outbox import screen
from relay.engine.outbox.doubts import Doubt, Doubts, confirm, leased
from relay.engine.outbox.screen import DeliveryReport, Failure, Handover, Ready, Retries, Screen
from relay.engine.runtime import Channels, Runtime
from relay.store import claims, commit_log, funnel
from relay.store import doubts as in_doubt_rows
from relay.store import outbox as outbox_rows
from relay.store.hotpath import locked_rows
from relay.store.hotpath.locked_rows import MessageRow

log = logging.getLogger("relay.outbox")

SEND_LEASE = timedelta(minutes=2)
#: At most this many deliveries share one confirming and one recording transaction.
DELIVERY_BATCH = 500
#: A batch the channel sent within this many seconds may grow (up to DELIVERY_BATCH);
#: a slower one shrinks back to one message, so with a slow channel each message is
#: confirmed just before and recorded just after its own send. Only the time in
#: the channel counts, not the confirming and recording transactions (slow on a
#: busy machine, and cheaper per message the bigger the group).
BATCH_SECONDS = 0.25
#: For this long after a claim, its first group is sent without a confirming
#: transaction where the claim held off every pause and cancel of those
#: conversations while it screened them (opt-out, pause, windows, rates): on
#: SQLite its write lock did, on PostgreSQL the conversations' row locks it took
#: before screening (those it could take at once). A pause after the claim finds
#: the rows ``sending``, reported in flight. Later groups, sent after earlier
#: sends took their time, and messages whose conversation was busy, are confirmed.
FRESH = timedelta(seconds=1)


@dataclass(frozen=True)
class _Sent:
    outbound: Outbound
    channel: str
    provider_id: str
    at: datetime


@dataclass
class Dispatcher:
    relay: Runtime
    channels: Channels
    #: Who claims (a daemon id): a restarted daemon takes its own dead claims back.
    owner: str | None = None
    #: Times channel calls, which decide how big delivery groups grow.
    timer: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        self.screen = Screen(self.relay, self.channels.threads, self.channels.links)
        settings = self.relay.config.settings.outbox
        self.retries = Retries(settings.backoff, settings.max_attempts)
        # How many deliveries go in the next group: learnt from how fast the
        # channels were, and kept from one call to the next.
        self.group_size = 1
        # Seconds spent in channel calls since the current group began.
        self._channel_seconds = 0.0
        # What turn commits leased to this dispatcher, screened, not yet sent.
        self._handed: list[Handover] = []
        # Conversations of the batch being sent whose message failed or was taken
        # over by another worker: the rest of their messages in the batch go back
        # to the outbox, to follow that one (see _not_behind).
        self._stalled: set[str] = set()

    def deliver_due(
        self, limit: int, *, message_id: int | None = None, instance_id: str | None = None
    ) -> DeliveryReport:
        """Send what turn commits handed over, then claim due rows and send them. The
        claim also leases the messages a dead sender left, and once its sends are done
        their channels are asked what became of them (:mod:`relay.engine.outbox.doubts`):
        with nothing in doubt that costs the claim one statement, no transaction.
        Only when one of them goes back to the outbox does a second claim run."""
        report = self.deliver_handed()
        asked = self._claim_and_send(limit, report, True, message_id, instance_id)
        if asked and Doubts(self.relay, self.channels, self.owner).resolve(asked, report):
            self._claim_and_send(limit, report, False, message_id, instance_id)
        return report

    def _claim_and_send(
        self,
        limit: int,
        report: DeliveryReport,
        doubts: bool,
        message_id: int | None,
        instance_id: str | None,
    ) -> list[Doubt]:
        """One claim (leasing, with ``doubts``, the messages a dead sender left, in
        its transaction) and its sends; returns those doubts, for :meth:`Doubts.resolve`."""
        with self.relay.store.transaction() as session:
            now = self.relay.now()
            in_doubt = (
                in_doubt_rows.claim_in_doubt(
                    session,
                    now,
                    SEND_LEASE,
                    limit,
                    self.owner,
                    message_id=message_id,
                    instance_id=instance_id,
                )
                if doubts
                else []
            )
            asked = leased(session, in_doubt, now + SEND_LEASE) if in_doubt else []
            batch = claims.claim_outbox(
                session,
                now,
                SEND_LEASE,
                limit,
                message_id=message_id,
                instance_id=instance_id,
                owner=self.owner,
            )
            held = self._hold_conversations(session, batch)  # before the screen reads
            ready = self.screen(session, batch, now, report)
            locked_rows.write(session, batch)  # what the screen held or ruled out
            claimed = {m.id: m.attempts for m in batch}
        # The first group's messages whose conversations the claim held go out on
        # it (see FRESH).
        fresh = {o.message_id for o, _ in ready if held is None or o.instance_id in held}
        self._send_ready(ready, claimed, report, fresh, self.relay.now() + FRESH)
        return asked

    def lease_new(self, session: Session, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Lease to this dispatcher the new outbox rows a turn commit is about to
        insert, in the commit's own transaction: they are written ``sending`` with
        their first attempt counted, and the claim's read and UPDATE of each row
        are never needed (see :meth:`screen_new`). Only rows whose conversation has
        nothing earlier waiting in the outbox: that goes first, through a claim.
        Returns the rows leased (changed in place)."""
        now = self.relay.now()
        busy = outbox_rows.pending_of(session, sorted({row["instance_id"] for row in rows}))
        leased = [
            r
            for r in rows
            if r["instance_id"] not in busy
            and r["next_attempt_at"] is not None  # a draft waits for a person
            and r["next_attempt_at"] <= now
        ]
        for row in leased:
            claims.lease_outbox_row(row, now + SEND_LEASE, self.owner)
        return leased

    def screen_new(
        self, session: Session, leased: list[dict[str, Any]], ids: dict[str, int]
    ) -> Handover:
        """Screen the rows :meth:`lease_new` leased, once inserted (``ids`` by
        idempotency key), as a claim screens its rows: under the commit's locks,
        which hold off every pause and cancel of these conversations (SQLite's
        write lock; on PostgreSQL the commit's locks on the conversations). Hand
        the result to :meth:`adopt` once the transaction has committed."""
        unread = dict.fromkeys(column.key for column in MessageRow.columns)
        rows = [MessageRow({**unread, **row, "id": ids[row["idempotency_key"]]}) for row in leased]
        now = self.relay.now()
        report = DeliveryReport()
        ready = self.screen(session, rows, now, report, counted=bool(self._handed))
        locked_rows.write(session, rows)  # what the screen held or ruled out
        return Handover(ready, {m.id: m.attempts for m in rows}, report, now + FRESH)

    def adopt(self, handover: Handover) -> None:
        """Take over what a committed turn batch leased to this dispatcher."""
        self._handed.append(handover)

    def deliver_handed(self) -> DeliveryReport:
        """Send what committed turn batches leased to this dispatcher; their first
        group goes without a confirming transaction, like a claim's (FRESH)."""
        report = DeliveryReport()
        while self._handed:
            handover = self._handed.pop(0)
            report.add(handover.report)
            fresh = {outbound.message_id for outbound, _ in handover.ready}
            self._send_ready(handover.ready, handover.attempts, report, fresh, handover.fresh_until)
        return report

    def _send_ready(
        self,
        ready: list[Ready],
        claimed: dict[int, int],
        report: DeliveryReport,
        fresh: set[int],
        fresh_until: datetime,
    ) -> None:
        """Send in small groups, each confirmed together just before its sends (but
        for the ``fresh`` messages of the first group, while ``fresh_until``) and
        recorded together just after. The groups grow while the channel is fast and
        drop back to one message when it is slow."""
        self._stalled.clear()
        position = 0
        while position < len(ready):
            group = ready[position : position + self.group_size]
            position += len(group)
            self._channel_seconds = 0.0
            first = position == len(group) and self.relay.now() < fresh_until
            self._send_group(group, claimed, report, confirmed=fresh if first else set())
            quick = self._channel_seconds < BATCH_SECONDS
            self.group_size = min(DELIVERY_BATCH, self.group_size * 4) if quick else 1

    def _hold_conversations(self, session: Session, batch: list[MessageRow]) -> set[str] | None:
        """Lock the claimed messages' conversations that are free, so that no pause
        or cancel of them commits between the screen and the claim's commit (None:
        all of them, SQLite's write lock holding off every writer). Busy ones are
        skipped, never waited for: this transaction holds message locks already,
        and every command locks a conversation before its messages."""
        if self.relay.store.writers_serialised:
            return None
        owners = sorted({m.instance_id for m in batch if m.instance_id})
        return claims.lock_free_instances(session, owners)

    def _send_group(
        self,
        group: list[tuple[Outbound, str]],
        claimed: dict[int, int],
        report: DeliveryReport,
        *,
        confirmed: set[int] | frozenset[int] = frozenset(),
    ) -> None:
        """Send a group, confirming it first but for the messages whose claim is fresh
        (``confirmed``). Should a send hang (a group only grows while sends are
        quick), the leases of the rest would run out and another worker could claim
        and send them too: so once half a lease has gone by, what was sent is
        recorded and the rest is confirmed (and its lease renewed) again."""
        rest = [item for item in group if item[0].message_id not in confirmed]
        pending = [item for item in group if item[0].message_id in confirmed]
        pending += self._confirm(rest, claimed, report) if rest else []
        confirmed_at = self.relay.now()
        sent: list[_Sent] = []
        while pending:
            if self.relay.now() - confirmed_at >= SEND_LEASE / 2:
                self._sent(sent, report)
                sent = []
                pending = self._confirm(pending, claimed, report)
                confirmed_at = self.relay.now()
                continue
            pending = self._not_behind(pending, claimed, report)
            if not pending:
                break
            run = self._next_run(pending)
            del pending[: len(run)]
            started = self.timer()
            sent.extend(self._deliver_run(run, claimed, report))
            self._channel_seconds += self.timer() - started
        self._sent(sent, report)

    def _not_behind(
        self, pending: list[tuple[Outbound, str]], claimed: dict[int, int], report: DeliveryReport
    ) -> list[tuple[Outbound, str]]:
        """``pending`` less the messages of stalled conversations, which go back to
        the outbox (:func:`~relay.engine.outbox.screen.put_back`), counted as held."""
        if not self._stalled:
            return pending
        behind = [o.message_id for o, _ in pending if o.instance_id in self._stalled]
        if not behind:
            return pending
        with self.relay.store.transaction() as session:
            report.held += screen.put_back(session, behind, claimed, self.relay.now())
        for message_id in behind:
            self.screen.forget(message_id)
        return [item for item in pending if item[0].instance_id not in self._stalled]

    def _next_run(self, pending: list[tuple[Outbound, str]]) -> list[tuple[Outbound, str]]:
        """The messages to hand over in one call: the leading run on one channel
        when that channel can send several at once, else just the first."""
        channel_name = pending[0][1]
        if self._batch_sender(channel_name) is None:
            return pending[:1]
        end = 1
        while end < len(pending) and pending[end][1] == channel_name:
            end += 1
        return pending[:end]

    def _sender(self, channel_name: str) -> Callable[[Outbound], str]:
        """The channel's ``send``, built when first called (a channel that cannot be
        built fails that message, as any failed send does)."""
        return lambda outbound: self.channels.get(channel_name).send(outbound)

    def _batch_sender(self, channel_name: str) -> Callable[[Sequence[Outbound]], list[str]] | None:
        """The channel's ``send_many``; None when it has none or cannot be built
        (then :meth:`_deliver` records why, message by message)."""
        try:
            return batch_sender(self.channels.get(channel_name))
        except Exception:
            return None

    def _deliver_run(
        self, run: list[tuple[Outbound, str]], claimed: dict[int, int], report: DeliveryReport
    ) -> list[_Sent]:
        """Hand a run of one channel's messages over in one call (``send_many``);
        when the call fails, each message of the run fails with its error."""
        outbound, channel_name = run[0]
        send_many = self._batch_sender(channel_name)
        if send_many is None or len(run) == 1:
            done = self._deliver(outbound, channel_name, claimed[outbound.message_id], report)
            return [] if done is None else [done]
        messages = [o for o, _ in run]
        result, failure = screen.attempt(lambda: send_many(messages))
        if result is not None and len(result) != len(messages):
            failure = Failure(f"send_many returned {len(result)} ids", True)
            result = None
        if result is None:
            for failed in messages:
                attempt = claimed[failed.message_id]
                self._failed(failed, attempt, failure or Failure("?", True), report=report)
            return []
        at = self.relay.now()
        return [_Sent(o, channel_name, p, at) for o, p in zip(messages, result, strict=True)]

    def _confirm(
        self, group: list[tuple[Outbound, str]], claimed: dict[int, int], report: DeliveryReport
    ) -> list[tuple[Outbound, str]]:
        """Just before the sends: is each row still ours, and may it still go?
        (:func:`relay.engine.outbox.doubts.confirm`)"""
        return confirm(self.relay, group, claimed, SEND_LEASE, report, self._stalled)

    def _deliver(
        self, outbound: Outbound, channel_name: str, attempt: int, report: DeliveryReport
    ) -> _Sent | None:
        """Hand one message to its channel; a failure is recorded at once, a success
        is returned for :meth:`_sent`."""
        send = self._sender(channel_name)
        provider_id, failure = screen.attempt(lambda: send(outbound))
        if provider_id is not None:
            return _Sent(outbound, channel_name, provider_id, self.relay.now())
        self._failed(outbound, attempt, failure or Failure("?", True), report=report)
        return None

    def _sent(self, sent: list[_Sent], report: DeliveryReport) -> None:
        """Record deliveries, a group in one transaction. Until it commits they stay
        ``sending``; after a crash they go again with the same idempotency keys."""
        if not sent:
            return
        with self.relay.store.transaction() as session:
            outbox_rows.record_sent(
                session, [(done.outbound.message_id, done.provider_id, done.at) for done in sent]
            )
            delivered = [(done.outbound, done.at) for done in sent]
            self.screen.move_heartbeats(session, delivered)
            funnel.record_first_deliveries(session, self.screen.first_deliveries(delivered))
            for done in sent:
                data = {"message_id": done.outbound.message_id, "channel": done.channel}
                transitions.record(
                    session, EventKind.SENT, done.outbound.instance_id, data, done.at
                )
                commit_log.info(
                    session,
                    log,
                    "message %s to %s sent on %s (%s)",
                    done.outbound.message_id,
                    done.outbound.to,
                    done.channel,
                    done.outbound.instance_id or "-",
                    instance_id=done.outbound.instance_id,
                )
        report.sent += len(sent)

    def _failed(
        self, outbound: Outbound, attempt: int, failure: Failure, *, report: DeliveryReport
    ) -> None:
        self.screen.forget(outbound.message_id)
        if outbound.instance_id:
            self._stalled.add(outbound.instance_id)
        with self.relay.store.transaction() as session:
            message = claims.lock_message(session, outbound.message_id)
            assert message is not None
            if not claims.still_leased(message, attempt):
                # Our attempt outlived its lease and another worker owns the row now.
                log.warning("message %s attempt %s failed (%s)", message.id, attempt, failure.error)
                return
            screen.record_failure(session, message, failure, self.relay.now(), report, self.retries)
