"""What each console page shows, read through the verbs :class:`relay.api.Relay`
delegates to and the
store's named reads (blocking: the routes run these in a worker thread).

Nothing here decides about a conversation: the actions call the same verbs as
the CLI, and the pages show what the views say.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from relay.core.errors import InvalidInput, RelayError
from relay.core.states import (
    HEARTBEAT_STATES,
    NEEDS_PERSON,
    PAUSED_STATES,
    QUEUED_STATES,
    TRANSITIONS,
    TURN_REASONS,
    Event,
    State,
    TurnReason,
)
from relay.engine.contacts.addresses import normalise
from relay.engine.verbs import contact_verbs, lookups
from relay.engine.verbs import conversations as conversation_verbs
from relay.store import console_reads
from relay.store.console_reads import SORTS, PageQuery

if TYPE_CHECKING:
    from relay.engine.runtime import Runtime

PAGE_SIZE = 50
#: The funnel's bars on the Campaigns page, in order (``relay stats``' names).
FUNNEL = ("started", "delivered", "replied", "completed", "opted_out", "abandoned", "bounced")
REPLY_DAYS = 14


def contact_name(fields: Mapping[str, Any] | None) -> str | None:
    """The contact's name from what an import told about it (a ``name`` column, or
    first and last name columns), else None."""
    if not fields:
        return None
    lowered = {str(k).lower().replace(" ", "_"): v for k, v in fields.items() if v}
    if lowered.get("name"):
        return str(lowered["name"])
    parts = [str(lowered[k]) for k in ("first_name", "last_name") if lowered.get(k)]
    return " ".join(parts) or None


def when(at: datetime | None) -> str:
    """The console's one time format: ``2026-11-25 22:47 UTC``."""
    return at.strftime("%Y-%m-%d %H:%M UTC") if at else ""


def next_step(row: Any, now: datetime) -> str:
    """What happens next to a listed conversation, from its row alone (the
    conversation's own page has the full forecast of ``relay show``)."""
    state = State(row.state)
    if state.terminal:
        return f"ended {when(row.ended_at)}"
    first = TURN_REASONS.get(state) is TurnReason.FIRST_MESSAGE
    if state in HEARTBEAT_STATES and row.next_heartbeat_at is not None:
        step = "gives up" if row.follow_up_count >= row.max_followups else "follow-up"
        return f"{step} {when(row.next_heartbeat_at)}"
    if first and row.not_before is not None and row.not_before > now:
        return f"first message {when(row.not_before)}"
    if state in PAUSED_STATES:
        return f"resumes {when(row.paused_until)}" if row.paused_until else "paused until resumed"
    if first:
        return "first message now"
    if state in QUEUED_STATES:
        return "waits for the contact's live conversation"
    if state in NEEDS_PERSON:
        return "waits for a person"
    return "agent's turn now"


def parse_query(params: Mapping[str, str], states: Sequence[str]) -> PageQuery:
    """The list's filters from a query string; a bad value is an InvalidInput."""
    chosen = tuple(s.strip().upper() for s in states if s.strip())
    for state in chosen:
        if state not in State.__members__:
            raise InvalidInput(f"unknown state {state!r}")
    sort = params.get("sort") or "created"
    if sort not in SORTS:
        raise InvalidInput(f"unknown sort {sort!r} (sorts: {', '.join(SORTS)})")
    page_text = params.get("page") or "1"
    if not page_text.isdigit() or int(page_text) < 1:
        raise InvalidInput("page must be a whole number from 1")
    return PageQuery(
        states=chosen,
        campaign=(params.get("campaign") or "").strip() or None,
        channel=(params.get("channel") or "").strip() or None,
        contact=(params.get("contact") or "").strip() or None,
        text=(params.get("q") or "").strip() or None,
        sort=sort,
        page=int(page_text),
        size=PAGE_SIZE,
    )


@dataclass(frozen=True)
class ListRow:
    id: str
    name: str | None
    address: str
    state: str
    objective: str
    campaign: str | None
    last_message: str | None
    last_direction: str | None
    last_at: str
    next: str


def conversations(relay: Runtime, query: PageQuery) -> dict[str, Any]:
    """The Conversations page (and Needs a person's, with its query)."""
    from relay.store import queries, reads

    address = _as_address(relay, query.contact)
    now = relay.now()
    with relay.store.read_transaction() as session:
        rows, more = console_reads.conversations_page(session, query, address=address)
        ids = [row.id for row in rows]
        last = reads.last_messages(session, ids)
        reasons = queries.latest_reasons(session, ids)
        campaigns = console_reads.campaign_names(session)
    channels = channel_names(relay)
    listed = []
    for row in rows:
        message = last.get(row.id)
        listed.append(
            ListRow(
                id=row.id,
                name=contact_name(row.contact_fields),
                address=row.address,
                state=row.state,
                objective=row.objective,
                campaign=row.campaign,
                last_message=message.body if message else None,
                last_direction=message.direction if message else None,
                last_at=when(message.created_at) if message else "",
                next=next_step(row, now),
            )
        )
    return {
        "rows": listed,
        "more": more,
        "query": query,
        "reasons": reasons,
        "campaigns": campaigns,
        "channels": channels,
        "states": [s.value for s in State],
        "sorts": list(SORTS),
    }


def channel_names(relay: Runtime) -> list[str]:
    """The configured channels (for the list's filter), not a scan of conversations."""
    names = {relay.config.settings.defaults.channel, "console"}
    names |= {key.split(".")[1] for key in relay.config.values if key.startswith("channels.")}
    return sorted(names)


def _as_address(relay: Runtime, contact: str | None) -> str | None:
    """``contact`` as a normalised address if it is one (else None: a name's part)."""
    if not contact:
        return None
    try:
        return normalise(relay, contact)
    except RelayError:
        return None


def conversation(relay: Runtime, instance_id: str) -> dict[str, Any]:
    """A conversation's page: the instance, its transcript, history and contact."""
    instance = conversation_verbs.get(relay, instance_id)
    person = contact_verbs.contact(relay, instance.contact)
    return {
        "instance": instance,
        "name": contact_name(person.fields),
        "person": person,
        "transcript": conversation_verbs.transcript(relay, instance.id),
        "history": conversation_verbs.history(relay, instance.id, commands=True),
        "actions": allowed_actions(instance.state, instance.previous_state),
    }


def allowed_actions(state: str, previous: str | None) -> list[str]:
    """The buttons worth showing (the state machine still decides: a click on a
    stale page is refused and the refusal shown)."""
    from relay.core.states import holds_slot

    current = State(state)
    if current.terminal:
        return []
    allowed = TRANSITIONS[current]
    actions = ["resume"] if Event.RESUME in allowed else []
    if Event.PAUSE in allowed:
        actions.append("pause")
    actions.append("cancel")
    previous_state = State(previous) if previous else None
    if holds_slot(current, previous_state):
        actions.append("send")
    return actions


def campaigns(relay: Runtime, chosen: str | None) -> dict[str, Any]:
    """The Campaigns page: the funnel, first replies per day, the median time to reply."""
    stats = lookups.stats(relay, campaign=chosen)
    since = (relay.now() - timedelta(days=REPLY_DAYS - 1)).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    with relay.store.read_transaction() as session:
        names = console_reads.campaign_names(session)
        replies = console_reads.first_replies_since(session, chosen, since)
        bounced = console_reads.bounced_count(session, chosen)
        times = _reply_seconds(stats)
    days = [(since + timedelta(days=n)).date() for n in range(REPLY_DAYS)]
    per_day = dict.fromkeys(days, 0)
    for at in replies:
        if at is not None and at.date() in per_day:
            per_day[at.date()] += 1
    bars = {
        "started": stats.started,
        "delivered": stats.delivered,
        "replied": stats.replied,
        "completed": stats.outcomes.get("completed", 0),
        "opted_out": stats.outcomes.get("opted_out", 0),
        "abandoned": stats.outcomes.get("abandoned", 0),
        "bounced": bounced,
    }
    return {
        "names": names,
        "chosen": chosen,
        "stats": stats,
        "bars": [(name, bars[name]) for name in FUNNEL],
        "top": max(bars.values()) or 1,
        "per_day": [(day.isoformat(), n) for day, n in per_day.items()],
        "day_top": max(per_day.values()) or 1,
        "median": times,
    }


def _reply_seconds(stats: Any) -> str:
    from relay.core.durations import format_duration

    seconds = stats.median_first_reply_seconds
    return format_duration(timedelta(seconds=round(seconds))) if seconds is not None else "-"
