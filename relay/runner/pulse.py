"""One pass over all due work: what ``relay tick`` runs and what each daemon pulse runs.

Order matters: snoozes end first, heartbeats fire, then turns run (first
messages, replies, follow-ups, resumes), then the outbox delivers what the
turns wrote. Turns repeat within the pass while new ones fall due (a
conversation that ends promotes a queued one, which is started at once).

What ``relay serve`` stored as it came (:mod:`relay.store.push_writer`) is
taken first (:func:`take_pushes`): it becomes transcript rows, opt-outs and
receipts by the same :func:`relay.engine.verbs.incoming.ingest` a poll uses, the
pushes deleted in that transaction. A push whose JSON cannot be read is kept
aside as a rejected arrival (``relay inbox --kind rejected``), never left to
block the rest.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from relay.channels.base import Inbound, Incoming, Receipt, Rejected
from relay.core.errors import RelayError
from relay.core.states import TERMINAL
from relay.engine.conversation import heartbeat
from relay.engine.outbox.dispatcher import DeliveryReport, Dispatcher
from relay.engine.runtime import Channels, Runtime, read_position
from relay.engine.turns.runner import TurnOutcome, TurnRunner
from relay.engine.verbs import incoming
from relay.engine.verbs.notify import notify_due
from relay.store import failures, pushes

log = logging.getLogger("relay.pulse")
#: The intake of pushes logs as the daemon, which runs it.
intake_log = logging.getLogger("relay.daemon")

MAX_ROUNDS = 10


@dataclass
class PulseReport:
    resumed: int = 0
    fired: int = 0
    abandoned: int = 0
    deferred: int = 0
    polled: int = 0
    #: Webhooks ``relay serve`` stored, taken into the transcript by this pass.
    pushed: int = 0
    turns: list[TurnOutcome] = field(default_factory=list)
    delivery: DeliveryReport = field(default_factory=DeliveryReport)
    errors: list[str] = field(default_factory=list)

    @property
    def idle(self) -> bool:
        d = self.delivery
        work = (
            self.resumed,
            self.fired,
            self.abandoned,
            self.polled,
            self.pushed,
            len(self.turns),
            d.sent,
            d.retried,
            d.failed,
            d.blocked,
        )
        return not any(work)

    def to_json(self) -> dict[str, Any]:
        return {
            "resumed": self.resumed,
            "heartbeats_fired": self.fired,
            "abandoned": self.abandoned,
            "deferred": self.deferred,
            "inbound_polled": self.polled,
            "inbound_pushed": self.pushed,
            "turns": [
                {
                    "instance_id": t.instance_id,
                    "reason": t.reason,
                    "state": t.state,
                    "messages": list(t.messages),
                    "discarded": t.discarded,
                    "note": t.note,
                }
                for t in self.turns
            ],
            "delivered": self.delivery.sent,
            "retrying": self.delivery.retried,
            "failed": self.delivery.failed,
            "blocked": self.delivery.blocked,
            "held": self.delivery.held,
            "errors": self.errors,
        }


class Pulse:
    def __init__(self, relay: Runtime, owner: str) -> None:
        self.relay = relay
        self.owner = owner
        self.channels = Channels(relay)
        self.dispatcher = Dispatcher(relay, self.channels, owner)
        # The turns' new outbox rows are leased to the dispatcher in their commit and
        # sent right after each batch (after_batch), without a claim.
        self.turns = TurnRunner(relay, owner, outbox=self.dispatcher)
        self.batch = relay.config.settings.daemon.batch

    def run(
        self, *, poll: bool = False, should_stop: Callable[[], bool] = lambda: False
    ) -> PulseReport:
        """One pass; ``should_stop`` is checked between steps and between turns, so
        a stopping daemon finishes the turn in progress and claims nothing more."""
        report = PulseReport()
        # What was pushed goes first: a STOP among it is honoured before any send.
        # One batch a pass, so that a flood of webhooks and the due follow-ups
        # take turns (the daemon runs the next pass at once while pushes wait).
        report.pushed = take_pushes(self.relay, self.batch)
        if poll:
            report.polled = self.poll(report)
        report.resumed = heartbeat.resume_snoozed(self.relay, self.batch)
        # Follow-ups whose agent answers at once run in the firing's transaction.
        beats = heartbeat.fire_due(
            self.relay, self.batch, heartbeat.Lease(self.owner, self.turns.lease), self.turns
        )
        report.fired, report.abandoned = beats.fired, beats.abandoned
        report.deferred = beats.deferred
        if beats.ran:
            report.turns.extend(beats.ran)
            report.delivery.add(self.dispatcher.deliver_handed())
        # The follow-ups the firing leased to this pulse go first, in its first round.
        leased = beats.claimed
        for _ in range(MAX_ROUNDS):
            if should_stop():
                self.turns.release(leased)
                break
            outcomes = self.turns.run_due(
                self.batch,
                leased=leased,
                should_stop=should_stop,
                after_batch=lambda: report.delivery.add(self.dispatcher.deliver_handed()),
            )
            leased = []
            report.turns.extend(outcomes)
            report.delivery.add(self.dispatcher.deliver_due(self.batch))
            if len(outcomes) < self.batch and not any(_promotes(o) for o in outcomes):
                break
        return report

    def poll(self, report: PulseReport) -> int:
        """Ask every configured channel what arrived after its stored position.

        The channel is called outside any transaction; what it returns is stored
        with its new position in one transaction (:func:`incoming.ingest`). Should
        that fail (a locked database, an outage), the position stays where it was
        and the next poll reads the same messages again.
        """
        received = 0
        for name in self.channels.names():
            try:
                received += self._poll_channel(name)
            except RelayError as exc:
                report.errors.append(f"polling {name}: {exc.message}")
                log.error("polling channel %s failed: %s", name, exc.message)
        try:
            if self.relay.config.settings.notify:
                notify_due(self.relay)
        except RelayError as exc:
            report.errors.append(f"notify: {exc.message}")
            log.error("notify failed: %s", exc.message)
        return received

    def _poll_channel(self, name: str) -> int:
        position = read_position(self.relay, name)
        batch = self.channels.get(name).poll(position)
        if not batch.messages and not batch.receipts and batch.cursor in (None, position):
            return 0
        stored = incoming.ingest(self.relay, name, batch, read_from=position)
        if stored.rejected:
            log.warning("channel %s: %s inbound message(s) kept aside", name, stored.rejected)
        return stored.stored


def run_once(relay: Runtime, *, poll: bool = True, owner: str | None = None) -> PulseReport:
    """One pass as ``relay tick`` or a program's ``run_due`` makes it (``owner``: who
    holds the claims; by default this host and process)."""
    import os
    import socket

    who = owner or f"api:{socket.gethostname()}:{os.getpid()}"
    return Pulse(relay, owner=who).run(poll=poll)


def _promotes(outcome: TurnOutcome) -> bool:
    """An ended conversation may have handed its contact's slot to a queued one."""
    return outcome.state in {state.value for state in TERMINAL}


# -- what relay serve stored -------------------------------------------------------------


def take_pushes(relay: Runtime, limit: int) -> int:
    """Ingest up to ``limit`` stored pushes, oldest first, one transaction per
    channel; how many were taken (by this process)."""
    with relay.store.read_transaction() as session:
        rows = pushes.waiting(session, limit)
    by_channel: dict[str, list[tuple[int, str]]] = {}
    for push_id, channel, text in rows:
        by_channel.setdefault(channel, []).append((push_id, text))
    taken = 0
    for channel, items in by_channel.items():
        ids = [push_id for push_id, _ in items]
        try:
            taking = partial(pushes.take, ids=ids)
            incoming.ingest(relay, channel, _merged(items), taking=taking)
        except failures.Taken:
            intake_log.debug("pushes on %s taken by another daemon", channel)
            continue
        taken += len(ids)
    return taken


def take_all(relay: Runtime, limit: int) -> int:
    """Take batches of ``limit`` until none is left; how many were taken."""
    total = 0
    while True:
        taken = take_pushes(relay, limit)
        total += taken
        if taken < limit:
            return total


def _merged(items: list[tuple[int, str]]) -> Incoming:
    """One :class:`Incoming` of the pushes' messages and receipts, in their order."""
    messages: list[Inbound] = []
    receipts: list[Receipt] = []
    rejected: list[Rejected] = []
    for push_id, text in items:
        try:
            arrived = Incoming.loads(text)
        except (ValueError, TypeError, KeyError) as exc:
            reason = f"push {push_id} unreadable: {type(exc).__name__}: {exc}"
            rejected.append(Rejected(reason=reason[:500], raw=text))
            continue
        messages.extend(arrived.messages)
        receipts.extend(arrived.receipts)
    return Incoming(messages=messages, receipts=receipts, rejected=rejected)
