"""The web console's reads: a page of conversations (filtered, sorted, paged in
SQL), the campaigns, replies per day.

A page is one statement of at most ``size + 1`` rows (the extra row says whether
there is a next page, so no count of the whole filtered set is taken) and one for
the rows' last messages: what it costs follows the page, not the store. The
filters land on indexed columns where they can (state, campaign; contact by
address through its unique index); the free-text filters (``text``, a contact's
name) narrow what the indexed ones found.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Row, Text, cast, func, or_, select
from sqlalchemy.orm import Session

from relay.core.values import DeliveryStatus, Direction
from relay.store.tables import contacts, instances, messages

#: Sort keys the console offers: (column, descending), ties broken by ``seq``.
SORTS: dict[str, tuple[Any, bool]] = {
    # Newest first, in the primary key's order (the default: no sort step).
    "created": (instances.c.seq, True),
    "updated": (instances.c.updated_at, True),
    "oldest": (instances.c.updated_at, False),
    "next": (instances.c.next_heartbeat_at, False),
    "state": (instances.c.state, False),
}


@dataclass(frozen=True)
class PageQuery:
    """What the list shows: each filter None or empty for "any"."""

    states: tuple[str, ...] = ()
    campaign: str | None = None
    channel: str | None = None
    #: An address (exact, after normalising) or part of one or of the contact's fields.
    contact: str | None = None
    #: Part of the objective or the subject, any case.
    text: str | None = None
    sort: str = "created"
    page: int = 1
    size: int = 50


def _filters(query: PageQuery, address: str | None) -> list[ColumnElement[bool]]:
    where: list[ColumnElement[bool]] = []
    if query.states:
        where.append(instances.c.state.in_(query.states))
    if query.campaign:
        where.append(instances.c.campaign == query.campaign)
    if query.channel:
        where.append(instances.c.channel == query.channel)
    if query.contact:
        part = query.contact.strip().lower()
        fields = func.lower(cast(contacts.c.fields, Text))
        # The fields are stored as JSON text, where a non-ASCII letter is escaped.
        escaped = json.dumps(part)[1:-1]
        matches = [
            func.lower(contacts.c.address).contains(part, autoescape=True),
            fields.contains(part, autoescape=True),
            fields.contains(escaped, autoescape=True),
        ]
        if address is not None:
            matches.append(contacts.c.address == address)
        where.append(or_(*matches))
    if query.text:
        part = query.text.strip().lower()
        where.append(
            or_(
                func.lower(instances.c.objective).contains(part, autoescape=True),
                func.lower(func.coalesce(instances.c.subject, "")).contains(part, autoescape=True),
            )
        )
    return where


def conversations_page(
    session: Session, query: PageQuery, *, address: str | None = None
) -> tuple[list[Row[Any]], bool]:
    """One page of conversations with their contact's address and fields, and
    whether another page follows. ``address``: ``query.contact`` normalised, when
    it is one (matched exactly, through the unique index)."""
    column, descending = SORTS.get(query.sort, SORTS["updated"])
    order = [column.desc() if descending else column.asc()]
    if query.sort == "next":
        order = [column.is_(None), column.asc()]  # nothing scheduled goes last
    order.append(instances.c.seq.desc() if descending else instances.c.seq.asc())
    statement = (
        select(instances, contacts.c.address, contacts.c.fields.label("contact_fields"))
        .join(contacts, contacts.c.id == instances.c.contact_id)
        .where(*_filters(query, address))
        .order_by(*order)
        .limit(query.size + 1)
        .offset((max(query.page, 1) - 1) * query.size)
    )
    rows = list(session.execute(statement).all())
    return rows[: query.size], len(rows) > query.size


def campaign_names(session: Session, limit: int = 500) -> list[str]:
    """Campaigns that have a conversation, by name: one index seek per campaign
    (the next name after the last), not a scan of the campaign index."""
    names: list[str] = []
    after: str | None = None
    column = instances.c.campaign
    while len(names) < limit:
        found = session.scalar(
            select(func.min(column)).where(
                column > after if after is not None else column.is_not(None)
            )
        )
        if found is None:
            break
        names.append(str(found))
        after = found
    return names


def first_replies_since(session: Session, campaign: str | None, since: datetime) -> Sequence[Any]:
    """When each conversation (of ``campaign``, or all) first got a reply, from
    ``since`` on: the console counts them per day (the funnel index covers it)."""
    statement = select(instances.c.first_reply_at).where(instances.c.first_reply_at >= since)
    if campaign:
        statement = statement.where(instances.c.campaign == campaign)
    return session.scalars(statement).all()


def bounced_count(session: Session, campaign: str | None) -> int:
    """Outbound messages a provider reported bounced (of ``campaign``'s conversations:
    found through the campaign index, then each one's messages)."""
    statement = select(func.count()).select_from(messages)
    if campaign:
        statement = statement.join(instances, instances.c.id == messages.c.instance_id).where(
            instances.c.campaign == campaign
        )
    statement = statement.where(
        messages.c.direction == Direction.OUTBOUND.value,
        messages.c.delivery_status == DeliveryStatus.BOUNCED.value,
    )
    return int(session.scalar(statement) or 0)
