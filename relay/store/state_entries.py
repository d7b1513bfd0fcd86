"""Named queries for agents' scoped key-value state (``relay.engine.scoped_state``)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from sqlalchemy import Select, bindparam, or_, select
from sqlalchemy.orm import Session

from relay.core.values import Scope
from relay.store.among import among_param, values_param
from relay.store.models import StateEntry
from relay.store.prepared import dialect_of, per_dialect


def entries_for(
    session: Session, contact_ids: Collection[str], instance_ids: Collection[str]
) -> Sequence[StateEntry]:
    """Every app-wide entry, and those of these contacts and these instances (one query)."""
    dialect = dialect_of(session)
    params = {
        "contacts": values_param(dialect, contact_ids),
        "instances": values_param(dialect, instance_ids),
    }
    return session.scalars(_entries(dialect), params).all()


@per_dialect
def _entries(dialect: str) -> Select[StateEntry]:
    return select(StateEntry).where(
        or_(
            StateEntry.scope == Scope.APP.value,
            (StateEntry.scope == Scope.CONTACT.value)
            & among_param(dialect, StateEntry.scope_id, "contacts"),
            (StateEntry.scope == Scope.INSTANCE.value)
            & among_param(dialect, StateEntry.scope_id, "instances"),
        )
    )


#: One key of one scope: the same statement every time.
_ONE = select(StateEntry).where(
    StateEntry.scope == bindparam("scope"),
    StateEntry.scope_id == bindparam("scope_id"),
    StateEntry.key == bindparam("key"),
)


def entry(session: Session, scope: str, scope_id: str, key: str) -> StateEntry | None:
    """One stored key of one scope, or None."""
    return session.scalar(_ONE, {"scope": scope, "scope_id": scope_id, "key": key})
