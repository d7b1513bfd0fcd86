"""The pushes ``relay serve`` stored and the daemon takes: read in order, and
deleted by the transaction that ingests them (``Relay.ingest(taking=...)``)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from relay.store import failures
from relay.store.database import affected
from relay.store.tables import pushes


def waiting(session: Session, limit: int) -> Sequence[tuple[int, str, str]]:
    """The oldest ``limit`` pushes: (id, channel, incoming JSON)."""
    query = (
        select(pushes.c.id, pushes.c.channel, pushes.c.incoming).order_by(pushes.c.id).limit(limit)
    )
    return [(row.id, row.channel, row.incoming) for row in session.execute(query)]


def take(session: Session, ids: Sequence[int]) -> None:
    """Delete the pushes ``ids`` in the caller's transaction; :class:`failures.Taken`
    when another daemon took any of them first (its transaction then ingested them:
    this one must roll back). On PostgreSQL the DELETE waits for the other's commit
    and then finds nothing."""
    deleted = affected(session.execute(delete(pushes).where(pushes.c.id.in_(ids))))
    if deleted != len(ids):
        raise failures.Taken(f"{len(ids) - deleted} push(es) taken by another process")
