"""Writing the event log (the one record of what happened, state changes included:
:mod:`relay.engine.conversation.transitions`): rows collected during a transaction,
inserted at its commit.

:func:`add` only appends to the session; just before the transaction commits,
every collected row is inserted with one statement (a pulse's batch of turns or
heartbeats costs one insert, like the transition log). A rolled-back
transaction drops its rows with everything else.

Cursor order is commit order. On PostgreSQL, ids from a sequence are handed out
when rows are inserted, not when they commit: a reader at cursor 10 could miss
id 9 committing a moment later. So the insert first takes a transaction-level
advisory lock, held until the commit: transactions that write events commit
their events one after another, and a reader never sees id N before every id
below N is committed (or rolled back, leaving a gap that is never filled). The
lock is taken last, after every row lock, so it cannot deadlock; it serialises
only the insert and the commit itself. SQLite serialises all writers anyway.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import event, select, text
from sqlalchemy.orm import Session

from relay.store import on_commit
from relay.store.hotpath import fast_writes
from relay.store.models import EventRow, Instance, table_of

_PENDING = on_commit.collection("relay_events")
#: The advisory-lock key that orders event commits on PostgreSQL ("relay" in ASCII).
ORDER_LOCK = 0x72656C6179


#: The state-change columns of a row that is not one (every row of an insert has
#: the same keys: :mod:`relay.store.hotpath.fast_writes`).
NO_CHANGE: dict[str, Any] = {"from_state": None, "to_state": None, "event": None, "reason": None}


def add(session: Session, row: dict[str, Any]) -> None:
    """Record one event row; it commits with the session's transaction."""
    on_commit.add(session, _PENDING, row)


def pending(session: Session) -> list[dict[str, Any]]:
    return on_commit.collected(session, _PENDING)


def _flush(session: Session) -> None:
    if not on_commit.outermost(session):
        return  # a savepoint's release: the rows wait for the commit
    rows = on_commit.take(session, _PENDING)
    if not rows:
        return
    session.flush()
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": ORDER_LOCK})
    fast_writes.insert_rows(session, table_of(EventRow), rows)


event.listen(Session, "before_commit", _flush)


def read(
    session: Session,
    *,
    after: int = 0,
    instance_ids: list[str] | None = None,
    kinds: list[str] | None = None,
    limit: int = 1000,
) -> list[tuple[EventRow, dict[str, Any] | None]]:
    """Events after cursor ``after``, oldest first, each with its instance's meta."""
    query = (
        select(EventRow, Instance.meta)
        .outerjoin(Instance, Instance.id == EventRow.instance_id)
        .where(EventRow.id > after)
        .order_by(EventRow.id)
        .limit(limit)
    )
    if instance_ids is not None:
        query = query.where(EventRow.instance_id.in_(instance_ids))
    if kinds is not None:
        query = query.where(EventRow.kind.in_(kinds))
    return [(row, meta) for row, meta in session.execute(query)]


def data_of(row: EventRow) -> dict[str, Any]:
    """What ``relay events`` shows as an event's ``data``: a state change's is made
    from its own columns (as relay wrote it before issue 31 folded the two logs)."""
    if row.data is None and row.to_state is not None:
        return {
            "from": row.from_state,
            "to": row.to_state,
            "event": row.event,
            "reason": row.reason,
        }
    return dict(row.data or {})


def last_id(session: Session) -> int:
    from sqlalchemy import func

    return int(session.scalar(select(func.max(EventRow.id))) or 0)
