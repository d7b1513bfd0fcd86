"""What a program or an operator looks up: results, contacts, the funnel, the live
view, the inbox and status (events: :mod:`relay.engine.verbs.program`; waiting:
:mod:`relay.engine.verbs.waiting`).

Kept apart from the commands (:mod:`relay.engine.verbs.conversations`) because none
of it changes a conversation: each is a read transaction over the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import Row
from sqlalchemy.orm import Session

from relay.core.durations import format_duration, parse_duration
from relay.core.errors import InvalidInput
from relay.core.states import QUEUED_STATE, State
from relay.core.values import MessageStatus
from relay.engine.contacts.addresses import normalise
from relay.engine.runtime import Runtime
from relay.engine.views.reports import (
    ContactRow,
    InboxItem,
    ResultView,
    StatsView,
    WatchRow,
    contact_name,
)
from relay.engine.views.status import DaemonView, StatusView
from relay.store import arrivals, due, instances, messages, status_counts
from relay.store import contacts as store_contacts
from relay.store import daemons as daemons_table

if TYPE_CHECKING:
    from relay.store.models import Instance, Message

#: A daemon that has not pulsed for this long is not counted as live.
DAEMON_SILENCE = timedelta(minutes=2)


def as_interval(value: str | timedelta) -> timedelta:
    return value if isinstance(value, timedelta) else parse_duration(value)


def parse_state(text: str) -> State:
    try:
        return State(text.strip().upper())
    except ValueError:
        names = ", ".join(s.value for s in State)
        raise InvalidInput(f"unknown state {text!r} (states: {names})") from None


# -- for programs: results, events, waiting ----------------------------------


def result(rt: Runtime, instance_id: str) -> ResultView:
    """Each todo with its status, answer and the message it came from."""
    from relay.engine.verbs.program import build_results

    with rt.store.read_transaction() as session:
        instance = instances.resolve(session, instance_id)
        return build_results(session, [instance])[0]


def results(rt: Runtime, instance_ids: Sequence[str]) -> list[ResultView]:
    from relay.engine.verbs.program import build_results

    with rt.store.read_transaction() as session:
        rows = list(instances.by_ids(session, list(instance_ids)))
        return build_results(session, rows)


def unattended_warnings(rt: Runtime) -> list[str]:
    """A warning when work is due and no daemon is alive to do it (else empty)."""
    with rt.store.read_transaction() as session:
        return unattended_now(session, rt.now())


def contacts(rt: Runtime, *, campaign: str | None = None, limit: int = 100) -> list[ContactRow]:
    """Contacts newest first, with their fields and conversation counts."""
    from relay.engine.verbs import operations

    with rt.store.read_transaction() as session:
        return operations.contact_rows(session, campaign=campaign, limit=limit)


def stats(
    rt: Runtime, *, campaign: str | None = None, since: str | timedelta | None = None
) -> StatsView:
    """The funnel: started, delivered, replied, and how conversations ended
    (``since``: only conversations started within this duration, e.g. 7d)."""
    from relay.core.outcomes import OUTCOMES
    from relay.store import funnel

    start = rt.now() - as_interval(since) if since else None
    with rt.store.read_transaction() as session:
        counts = funnel.funnel(session, campaign=campaign, since=start)
        return StatsView(
            campaign=campaign,
            since=start,
            started=counts["started"],
            delivered=counts["delivered"],
            replied=counts["replied"],
            outcomes={name: counts[name] for name in OUTCOMES},
            median_first_reply_seconds=funnel.median_first_reply(
                session, campaign=campaign, since=start
            ),
            followups=counts["followups"],
            failed_deliveries=tuple(
                funnel.failed_deliveries(session, campaign=campaign, since=start)
            ),
            intents=_intents(funnel.replies_by_intent(session, campaign=campaign, since=start)),
        )


def _intents(counts: dict[str, int]) -> dict[str, int]:
    """Every label, in its order, with its count of replies (0 for none)."""
    from relay.core.intents import LABELS

    return {label: counts.get(label, 0) for label in LABELS}


def watch(
    rt: Runtime,
    *,
    state: str | None = None,
    contact: str | None = None,
    campaign: str | None = None,
    finished: bool = False,
    limit: int = 100,
) -> list[WatchRow]:
    """``relay watch``'s rows: needs-human first, then the latest changed; live
    conversations only unless ``finished`` (two statements, one read transaction)."""
    from relay.store import reads

    states = [parse_state(state).value] if state else [
        s.value for s in State if finished or not s.terminal
    ]  # fmt: skip
    with rt.store.read_transaction() as session:
        person = store_contacts.by_address(session, normalise(rt, contact)) if contact else None
        if contact and person is None:
            return []
        rows = reads.watch_rows(
            session,
            states=states,
            contact_id=person.id if person else None,
            campaign=campaign,
            limit=limit,
        )
        last = messages.latest_for(session, [row[0].id for row in rows])
    now = rt.now()
    return [
        _watch_row(inst, address, depth, fields, last.get(inst.id), now)
        for inst, address, depth, fields in rows
    ]


# -- the operator's inbox -------------------------------------------------


def inbox(rt: Runtime, *, kinds: Sequence[str] | None = None, limit: int = 50) -> list[InboxItem]:
    """Inbound no conversation took: unrouted, late (its conversation had ended)
    and rejected (no usable sender), newest first; ``kinds`` None: all three."""
    from relay.engine.verbs import operations

    chosen = tuple(kinds) if kinds else operations.INBOX_KINDS
    with rt.store.read_transaction() as session:
        return operations.inbox(session, kinds=chosen, limit=limit)


# -- status -------------------------------------------------------------


def status(rt: Runtime) -> StatusView:
    with rt.store.read_transaction() as session:
        states = status_counts.instances_by_state(session)
        # Only the statuses shown (an index range, not every message ever sent).
        outbound = status_counts.outbound_by_status(session, STATUS_COUNTED)
        unrouted = status_counts.unrouted_count(session)
        late, rejected = arrivals.inbound_trouble(session)
        now = rt.now()
        daemons, last_seen = _daemons(session, now)
        # Turns, heartbeats, snoozes and deliveries due now (held ones are not due yet).
        due_now = due.count_due(session, now)
    pending = outbound.get("queued", 0) + outbound.get("sending", 0)
    warnings = unattended(due_now, len(daemons))
    return StatusView(
        states={s.value: states.get(s.value, 0) for s in State},
        queue_depth=states.get(QUEUED_STATE.value, 0),
        outbox_pending=pending,
        outbox_failed=outbound.get("failed", 0),
        unrouted_inbound=unrouted,
        late_inbound=late,
        rejected_inbound=rejected,
        work_due=due_now,
        daemons=tuple(
            DaemonView(d.id, d.host, d.pid, d.started_at, d.last_pulse_at) for d in daemons
        ),
        last_daemon_seen=last_seen,
        warnings=tuple(warnings),
    )


def _daemons(session: Session, now: datetime) -> tuple[Sequence[Row[Any]], datetime | None]:
    """The live daemons, and when any daemon last pulsed. Live: pulsed recently and
    not stopped (a killed daemon never records its stop)."""
    daemons = daemons_table.live_daemons(session, now - DAEMON_SILENCE)
    return daemons, daemons_table.last_pulse(session)


def unattended(due_now: int, live_daemons: int) -> list[str]:
    """A warning as soon as work is due and no daemon is alive to do it (one that
    pulsed within :data:`DAEMON_SILENCE` and has not stopped): ``relay status`` and
    every wait say it, so nobody waits for work nothing will do."""
    if not due_now or live_daemons:
        return []
    return [
        f"{due_now} item(s) of work are due and no daemon is running (none has pulsed "
        f"in the last {format_duration(DAEMON_SILENCE)}); run `relay daemon`, or "
        "`relay tick` once"
    ]


def unattended_now(session: Session, now: datetime) -> list[str]:
    """:func:`unattended` read from the store (two indexed counts)."""
    daemons = daemons_table.live_daemons(session, now - DAEMON_SILENCE)
    if daemons:
        return []
    return unattended(due.count_due(session, now), 0)


def _watch_row(
    instance: Instance,
    address: str,
    depth: int,
    fields: dict[str, Any] | None,
    last: Message | None,
    now: datetime,
) -> WatchRow:
    from relay.engine.conversation.forecast import at_a_glance

    return WatchRow(
        id=instance.id,
        contact=address,
        contact_name=contact_name(fields),
        next=at_a_glance(instance, now),
        state=instance.state,
        previous_state=instance.previous_state,
        objective=instance.objective,
        campaign=instance.campaign,
        updated_at=instance.updated_at,
        next_heartbeat_at=instance.next_heartbeat_at,
        queue_depth=int(depth or 0),
        last_message=last.body if last else None,
        last_direction=last.direction if last else None,
        last_message_at=last.created_at if last else None,
    )


#: The outbound statuses ``relay status`` reports (pending and failed).
STATUS_COUNTED = (
    MessageStatus.QUEUED.value,
    MessageStatus.SENDING.value,
    MessageStatus.FAILED.value,
)
