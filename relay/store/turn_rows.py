"""What a batch of claimed turns is read from: plain rows, no ORM objects."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from relay.core.values import MessageStatus
from relay.store.hotpath import prepared
from relay.store.hotpath.among import among_param
from relay.store.hotpath.prepared import per_dialect
from relay.store.messages import UNDELIVERABLE
from relay.store.tables import contacts, instances, messages

if TYPE_CHECKING:
    from relay.store.hotpath.prepared import AnySelect, Rows

#: The instance columns a turn's context is built from.
_CONTEXT_INSTANCE = (
    instances.c.id,
    instances.c.state,
    instances.c.version,
    instances.c.lease_owner,
    instances.c.contact_id,
    instances.c.objective,
    instances.c.agent,
    instances.c.turn_attempts,
    instances.c.follow_up_count,
    instances.c.max_followups,
    instances.c.result_schema,
    instances.c.campaign,
)


def context_rows(session: Session, instance_ids: Iterable[str]) -> Rows:
    """The instances' context columns with their contact's address and fields: plain
    rows, since nothing read for a turn's context is changed (ORM objects for a
    batch cost more than the SQL)."""
    return prepared.batch(session, _context_rows, instance_ids)


@per_dialect
def _context_rows(dialect: str) -> AnySelect:
    return (
        select(*_CONTEXT_INSTANCE, contacts.c.address, contacts.c.fields)
        .join(contacts, contacts.c.id == instances.c.contact_id)
        .where(among_param(dialect, instances.c.id, "ids"))
    )


#: What a turn's context shows of a message: plain rows, not ORM objects (building and
#: tracking those cost more than the query for a batch of transcripts).
CONTEXT_COLUMNS = (
    messages.c.id,
    messages.c.instance_id,
    messages.c.direction,
    messages.c.author,
    messages.c.body,
    messages.c.created_at,
)


def transcripts_for(
    session: Session, instance_ids: Sequence[str], limit: int, *, said_only: bool = False
) -> dict[str, list[Any]]:
    """:func:`relay.store.messages.transcript_of` with ``limit`` for several instances at
    once, as read-only rows of :data:`CONTEXT_COLUMNS`."""
    found: dict[str, list[Any]] = {i: [] for i in instance_ids}
    build = partial(_transcripts, said_only=said_only)
    for row in prepared.batch(session, build, instance_ids, limit=limit):
        found[row.instance_id or ""].append(row)
    return found


@per_dialect
def _transcripts(dialect: str, said_only: bool) -> AnySelect:
    query = select(
        *CONTEXT_COLUMNS,
        func.row_number()
        .over(partition_by=messages.c.instance_id, order_by=messages.c.id.desc())
        .label("recent"),
    ).where(among_param(dialect, messages.c.instance_id, "ids"))
    if said_only:
        query = query.where(messages.c.status.not_in(UNDELIVERABLE))
    ranked = query.subquery()
    columns = [ranked.c[column.key] for column in CONTEXT_COLUMNS]
    return select(*columns).where(ranked.c.recent <= bindparam("limit")).order_by(ranked.c.id)


def inbound_rows_for(session: Session, instance_ids: Sequence[str]) -> dict[str, list[Any]]:
    """What arrived and no turn has read yet, as read-only rows of :data:`CONTEXT_COLUMNS`."""
    found: dict[str, list[Any]] = {i: [] for i in instance_ids}
    for row in prepared.batch(session, _inbound_rows, instance_ids):
        found[row.instance_id or ""].append(row)
    return found


@per_dialect
def _inbound_rows(dialect: str) -> AnySelect:
    return (
        select(*CONTEXT_COLUMNS)
        .where(
            among_param(dialect, messages.c.instance_id, "ids"),
            messages.c.status == MessageStatus.RECEIVED.value,
        )
        .order_by(messages.c.id)
    )
