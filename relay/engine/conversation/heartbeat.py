"""Heartbeats: following up with silent contacts, and abandoning after the limit.

What is due is a column (``next_heartbeat_at``, set on entering
WAITING_FOR_REPLY), so a daemon that was down for a day fires each overdue
heartbeat once, in due order, when it comes back: the firing moves the
instance out of WAITING_FOR_REPLY, and the next countdown starts only after
the follow-up is sent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, TypeAlias

from sqlalchemy import Row
from sqlalchemy.orm import Session

from relay.core.clock import isoformat
from relay.core.errors import InvalidInput
from relay.core.states import Event
from relay.engine.conversation import fallback, policy, transitions
from relay.store import claims, commit_log
from relay.store.hotpath import locked_rows
from relay.store.hotpath.locked_rows import InstanceFields

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


@dataclass(frozen=True)
class Lease:
    """Who takes the follow-up turns a firing makes due, and for how long."""

    owner: str
    length: timedelta


def fire_due(relay: Runtime, limit: int, lease: Lease | None = None) -> HeartbeatReport:
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
    owner in the same transaction (as :func:`claims.claim_turns` would): a
    daemon that fires a heartbeat runs its follow-up next, without reading and
    writing the row once more to claim it.
    """
    report = HeartbeatReport()
    with relay.store.transaction() as session:
        now = relay.now()
        firing: list[tuple[str, int, str]] = []
        others: dict[str, _Handler] = {}
        laddered: list[str] = []
        rows = claims.due_heartbeats(session, now, limit)
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
        leasing = None if lease is None else (lease.owner, now + lease.length)
        claimed = transitions.fire_waiting(session, firing, now=now, actor=ACTOR, lease=leasing)
        _fall_back(session, laddered, now)
        report.fired = len(firing)
        if lease is not None:
            report.claimed = claimed
        _settle(session, others, report)
    return report


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
