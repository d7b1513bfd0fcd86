"""Heartbeats: following up with silent contacts, and abandoning after the limit.

What is due is a column (``next_heartbeat_at``, set on entering
WAITING_FOR_REPLY), so a daemon that was down for a day fires each overdue
heartbeat once, in due order, when it comes back: the firing moves the
instance out of WAITING_FOR_REPLY, and the next countdown starts only after
the follow-up is sent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from sqlalchemy import Row
from sqlalchemy.orm import Session

from relay.core.clock import isoformat
from relay.core.errors import InvalidInput
from relay.core.states import Event
from relay.engine.conversation import fallback, policy, transitions
from relay.store import claims, commit_log
from relay.store.hotpath import locked_rows
from relay.store.hotpath.locked_rows import InstanceFields, InstanceRow

if TYPE_CHECKING:
    from relay.engine.runtime import Runtime

log = logging.getLogger("relay.heartbeat")

ACTOR = "heartbeat"


@dataclass
class HeartbeatReport:
    fired: int = 0
    abandoned: int = 0
    deferred: int = 0
    #: (instance id, version) of the follow-up turns leased in the firing
    #: transaction, for the caller to run without claiming them again.
    claimed: list[tuple[str, int]] = field(default_factory=list)
    #: The outcomes of the follow-up turns run in the firing's transaction (AtOnce).
    ran: list[Any] = field(default_factory=list)


@dataclass(frozen=True)
class Lease:
    """Who takes the follow-up turns a firing makes due, and for how long."""

    owner: str
    length: timedelta


class AtOnce(Protocol):
    """Runs the follow-up turns of conversations whose agent answers at once (no
    I/O: the scripted agent) inside the transaction that fires them, on their
    locked rows: each row is written once, with its turn's result, instead of
    once by the firing and again by the turn's commit (issue 31)."""

    def takes_at_once(self, agent: str) -> bool:
        """Whether turns of ``agent`` may run inside a firing's transaction."""
        ...

    def run_at_once(
        self, session: Session, rows: dict[str, InstanceRow], claimed: list[tuple[str, int]]
    ) -> list[Any]:
        """Run the leased turns ``claimed`` on ``rows`` (fired, not yet written);
        their outcomes."""
        ...

    def at_once_done(self, committed: bool) -> None:
        """The firing's transaction committed (hand what it wrote on) or rolled back."""
        ...


def fire_due(
    relay: Runtime, limit: int, lease: Lease | None = None, at_once: AtOnce | None = None
) -> HeartbeatReport:
    """Fire every due heartbeat (up to ``limit``) in one transaction; with a
    ``lease`` and ``at_once``, the follow-ups whose agent answers at once are run
    in it too (:class:`AtOnce`). Should that fail, nothing of it is kept and the
    heartbeats are fired again the usual way, their turns left to the caller."""
    if at_once is not None and lease is not None:
        try:
            report = _fire_due(relay, limit, lease, at_once)
        except Exception:
            at_once.at_once_done(committed=False)
            log.warning("running fired follow-ups at once failed; firing them", exc_info=True)
        else:
            at_once.at_once_done(committed=True)
            return report
    return _fire_due(relay, limit, lease, None)


def _fire_due(
    relay: Runtime, limit: int, lease: Lease | None, at_once: AtOnce | None
) -> HeartbeatReport:
    """Fire every due heartbeat (up to ``limit``) in one transaction.

    Rows are locked and re-checked by the claim query itself, so a heartbeat
    for an instance that meanwhile got a reply, was paused or ended is not
    seen at all. A follow-up due outside the contact's sending window waits
    for it to open; abandoning sends nothing, so it never waits. An instance
    whose window cannot be worked out (a time zone or window that is no longer
    valid) goes to a person instead of failing the whole batch every pulse.
    The plain firings (most of a batch) are written with one statement
    (:func:`transitions.fire_waiting`); only those exceptions load their rows.
    With a ``lease``, each follow-up turn the firing makes due is leased to its
    owner in the same transaction (as :func:`claims.claim_turns` would), and
    those ``at_once`` takes are fired on their rows in memory and run here.
    """
    report = HeartbeatReport()
    with relay.store.transaction() as session:
        now = relay.now()
        # Read whole when their turns may run here: those rows are changed and written.
        rows: Sequence[Any] = (
            claims.due_heartbeat_rows(session, now, limit)
            if at_once is not None and lease is not None
            else claims.due_heartbeats(session, now, limit)
        )
        firing, others, laddered = _sorted_out(session, rows, relay, now)
        leasing = None if lease is None else (lease.owner, now + lease.length)
        now_ids = _taken(rows, firing, laddered, at_once if leasing is not None else None)
        later = [item for item in firing if item[0] not in now_ids]
        claimed = transitions.fire_waiting(session, later, now=now, actor=ACTOR, lease=leasing)
        _fall_back(session, laddered, now)
        if now_ids and at_once is not None:
            ran = [item for item in firing if item[0] in now_ids]
            whole_rows = {row.id: row for row in rows if row.id in now_ids}
            report.ran = _run_at_once(session, ran, whole_rows, at_once, now, leasing)
        report.fired = len(firing)
        if lease is not None:
            report.claimed = claimed
        _settle(session, others, report)
    return report


def _sorted_out(
    session: Session, rows: Sequence[Any], relay: Runtime, now: datetime
) -> tuple[list[tuple[str, int, str]], dict[str, _Handler], list[str]]:
    """The plain firings (id, version, reason), the others with their handler, and
    the firings with a channel ladder."""
    firing: list[tuple[str, int, str]] = []
    others: dict[str, _Handler] = {}
    laddered: list[str] = []
    places = policy.places_of(session, rows, relay.config) if rows else {}
    for row in rows:
        handler = _exception(session, row, relay, now, places)
        if handler is None:
            reason = f"follow-up {row.follow_up_count + 1} of {row.max_followups}"
            firing.append((row.id, row.version, reason))
            if row.ladder:
                laddered.append(row.id)
        else:
            others[row.id] = handler
    return firing, others, laddered


def _taken(
    rows: Sequence[Row[Any]],
    firing: list[tuple[str, int, str]],
    laddered: list[str],
    at_once: AtOnce | None,
) -> set[str]:
    """The firings whose turns ``at_once`` runs: not those with a channel ladder
    (their fallback writes the row on its own)."""
    if at_once is None:
        return set()
    fires = {item[0] for item in firing}.difference(laddered)
    return {row.id for row in rows if row.id in fires and at_once.takes_at_once(row.agent)}


def _run_at_once(
    session: Session,
    firing: list[tuple[str, int, str]],
    locked: dict[str, InstanceRow],
    at_once: AtOnce,
    now: datetime,
    leasing: tuple[str, datetime] | None,
) -> list[Any]:
    """Fire ``firing`` on their ``locked`` rows (read whole by the claim), run their
    turns, write each row once."""
    claimed = transitions.fire_waiting(
        session, firing, now=now, actor=ACTOR, lease=leasing, rows=locked
    )
    ran = at_once.run_at_once(session, locked, claimed)
    locked_rows.write(session, locked.values())
    return ran


#: What to do with a due heartbeat that is not a plain firing, given its locked row.
_Handler: TypeAlias = Callable[[Session, InstanceFields, HeartbeatReport], None]


def _exception(
    session: Session,
    row: Row[Any],
    relay: Runtime,
    now: datetime,
    places: dict[int, tuple[str, str | None]],
) -> _Handler | None:
    """How a due heartbeat is handled if it does not simply fire: abandoned at the
    limit, held for its sending window, or given to a person when that window
    cannot be worked out. None: it fires."""
    if row.follow_up_count >= row.max_followups:
        return partial(_abandon, now=now)
    try:
        opens = policy.next_window_open(session, row, relay.config, now, places)
    except InvalidInput as exc:
        return partial(_stuck, now=now, why=exc.message)
    if opens <= now:
        return None
    return partial(_hold, opens=opens)


def _fall_back(session: Session, instance_ids: list[str], now: datetime) -> None:
    """Fired conversations with a channel ladder: their follow-up goes on the next
    channel when the contact has been silent long enough on this one."""
    if not instance_ids:
        return
    locked = claims.lock_instances(session, instance_ids)
    for instance in locked.values():
        fallback.after_silence(session, instance, now)
    locked_rows.write(session, locked.values())


def _settle(session: Session, others: dict[str, _Handler], report: HeartbeatReport) -> None:
    """Load the rows of the heartbeats that do not simply fire, and handle each."""
    if not others:
        return
    locked = claims.lock_instances(session, list(others))
    for instance_id, handle in others.items():
        handle(session, locked[instance_id], report)
    locked_rows.write(session, locked.values())


def _hold(
    session: Session, instance: InstanceFields, report: HeartbeatReport, *, opens: datetime
) -> None:
    """The follow-up waits for the contact's sending window to open."""
    instance.next_heartbeat_at = opens
    report.deferred += 1
    commit_log.info(
        session,
        log,
        "instance %s: follow-up held for the sending window until %s",
        instance.id,
        isoformat(opens),
        instance_id=instance.id,
    )


def _abandon(
    session: Session, instance: InstanceFields, report: HeartbeatReport, *, now: datetime
) -> None:
    transitions.apply_event(session, instance, Event.HEARTBEAT_FIRES, now=now, actor=ACTOR)
    transitions.apply_event(
        session,
        instance,
        Event.MAX_FOLLOWUPS_EXCEEDED,
        now=now,
        actor=ACTOR,
        reason=f"no reply after {instance.follow_up_count} follow-up(s)",
    )
    report.abandoned += 1
    commit_log.info(session, log, "instance %s abandoned", instance.id, instance_id=instance.id)


def _stuck(
    session: Session,
    instance: InstanceFields,
    _report: HeartbeatReport,
    *,
    now: datetime,
    why: str,
) -> None:
    log.error(
        "instance %s: cannot send its follow-up: %s",
        instance.id,
        why,
        extra={"instance_id": instance.id},
    )
    transitions.apply_event(
        session,
        instance,
        Event.REQUEST_INTERVENTION,
        now=now,
        actor=ACTOR,
        reason=f"cannot work out the sending window for the follow-up: {why}",
    )


def resume_snoozed(relay: Runtime, limit: int) -> int:
    """Resume instances paused with ``--until`` whose time has come."""
    resumed = 0
    with relay.store.transaction() as session:
        now = relay.now()
        for instance in claims.due_snoozes(session, now, limit):
            transitions.apply_event(
                session, instance, Event.RESUME, now=now, actor="snooze", reason="snooze ended"
            )
            resumed += 1
    return resumed
