"""What each console page shows, read through the verbs :class:`relay.api.Relay`
delegates to and the
store's named reads (blocking: the routes run these in a worker thread).

Nothing here decides about a conversation: the actions call the same verbs as
the CLI, and the pages show what the views say.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from relay.console.approvals import awaiting
from relay.core.errors import InvalidInput, RelayError
from relay.core.forecasts import Forecast, Next
from relay.core.states import NEEDS_PERSON_STATE, TRANSITIONS, Event, State
from relay.engine.contacts.addresses import normalise
from relay.engine.conversation.forecast import at_a_glance
from relay.engine.verbs import contact_verbs, drafts, lookups
from relay.engine.verbs import conversations as conversation_verbs
from relay.engine.views.reports import contact_name
from relay.store import console_reads, contacts, messages
from relay.store.console_reads import SORTS, PageQuery

if TYPE_CHECKING:
    from relay.engine.runtime import Runtime

PAGE_SIZE = 50
#: The funnel's bars on the Campaigns page, in order (``relay stats``' names).
FUNNEL = ("started", "delivered", "replied", "completed", "opted_out", "abandoned", "bounced")
REPLY_DAYS = 14


def when(at: datetime | None) -> str:
    """The console's one time format: ``2026-11-25 22:47 UTC``."""
    return at.strftime("%Y-%m-%d %H:%M UTC") if at else ""


def next_step(row: Any, now: datetime) -> str:
    """What happens next to a listed conversation, in a few words: the engine's
    forecast from the row alone (:func:`at_a_glance`, what ``relay watch`` shows),
    in the console's time format. The conversation's own page has the full
    forecast of ``relay show``."""
    forecast = at_a_glance(row, now)
    if forecast is None:
        return f"ended {when(row.ended_at)}"
    return _NEXT_WORDS[forecast.next](forecast)


def _drafts(f: Forecast) -> str:
    count = int(f.detail or 1)
    return "a draft awaits approval" if count == 1 else f"{count} drafts await approval"


_NEXT_WORDS: dict[Next, Callable[[Forecast], str]] = {
    Next.FIRST_MESSAGE: lambda f: f"first message {when(f.until) if f.until else 'now'}",
    # A follow-up at a time is the heartbeat's; one without is a turn due now.
    Next.FOLLOW_UP: lambda f: f"follow-up {when(f.at)}" if f.at else "agent's turn now",
    Next.ABANDON: lambda f: f"gives up {when(f.at)}",
    Next.REPLY: lambda f: "agent's turn now",
    Next.AWAIT_REPLY: lambda f: "waits for the contact's reply",
    Next.QUEUED: lambda f: "waits for the contact's live conversation",
    Next.PAUSED: lambda f: f"resumes {when(f.until)}" if f.until else "paused until resumed",
    Next.PERSON: lambda f: "waits for a person",
    Next.APPROVAL: _drafts,
    Next.DELIVERY: lambda f: "delivery",
}


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
    from relay.store import queries

    address = _as_address(relay, query.contact)
    now = relay.now()
    with relay.store.read_transaction() as session:
        rows, more = console_reads.conversations_page(session, query, address=address)
        ids = [row.id for row in rows]
        last = messages.latest_for(session, ids)
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
    """A conversation's page: the instance, its transcript, history, contact and the
    drafts of its agent's that wait for a person."""
    instance = conversation_verbs.get(relay, instance_id)
    person = contact_verbs.contact(relay, instance.contact)
    return {
        "instance": instance,
        "name": contact_name(person.fields),
        "person": person,
        "transcript": conversation_verbs.transcript(relay, instance.id),
        "history": conversation_verbs.history(relay, instance.id, commands=True),
        "actions": allowed_actions(instance.state, instance.previous_state),
        "drafts": drafts.pending(relay, instance.id),
    }


def needs_person(relay: Runtime, page: str) -> dict[str, Any]:
    """Needs a person: the conversations a person must answer, oldest first, and
    the drafts waiting for a person's approval, oldest first."""
    query = parse_query({"sort": "oldest", "page": page}, [NEEDS_PERSON_STATE.value])
    context = conversations(relay, query)
    waiting, total = awaiting(relay)
    names = _names(relay, {d.contact for d in waiting})
    return {**context, "drafts": waiting, "drafts_total": total, "draft_names": names}


def _names(relay: Runtime, addresses: set[str]) -> dict[str, str]:
    """The contacts' names by address, for the few drafts listed (one read)."""
    with relay.store.read_transaction() as session:
        found = contacts.by_addresses(session, sorted(addresses))
        named = {address: contact_name(person.fields) for address, person in found.items()}
    return {address: name for address, name in named.items() if name}


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
