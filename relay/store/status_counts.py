"""The counts ``relay status`` shows: conversations by state, the outbox, the
unrouted inbound, and the daemons that are pulsing."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from relay.core.states import SUCCESS_STATE, State
from relay.core.values import Direction
from relay.store import queries
from relay.store.tables import instances, messages

#: The state counted as "all the rest" on SQLite: finished conversations are most
#: of a store's history, and the one count that would grow with it.
_BY_TOTAL = SUCCESS_STATE.value
_COUNTED = tuple(s.value for s in State if s.value != _BY_TOTAL)


def instances_by_state(session: Session) -> dict[str, int]:
    """Conversations per state (states with none left out).

    On SQLite ``GROUP BY state`` steps through every row of the state index (45 ms
    at a million conversations). There the other states are counted by index
    ranges and COMPLETED is the total minus them: SQLite answers a bare
    ``count(*)`` from the b-tree's pages (2 ms at a million), so the cost follows
    the conversations that are not completed. PostgreSQL scans the table for a
    total either way, so it groups in one statement.
    """
    if session.get_bind().dialect.name != "sqlite":
        return queries.count_by(session, instances.c.state)
    counts = queries.count_by(session, instances.c.state, instances.c.state.in_(_COUNTED))
    total = int(session.scalar(select(func.count()).select_from(instances)) or 0)
    rest = total - sum(counts.values())
    if rest:
        counts[_BY_TOTAL] = rest
    return counts


def outbound_by_status(session: Session, statuses: Sequence[str]) -> dict[str, int]:
    """Outbound counted by status, for these statuses only (an index range, not
    every message ever sent)."""
    return queries.count_by(
        session,
        messages.c.status,
        messages.c.direction == Direction.OUTBOUND.value,
        messages.c.status.in_(statuses),
    )


def unrouted_count(session: Session) -> int:
    """Inbound that reached no conversation."""
    return int(
        session.scalar(
            select(func.count())
            .select_from(messages)
            .where(
                messages.c.instance_id.is_(None), messages.c.direction == Direction.INBOUND.value
            )
        )
        or 0
    )
