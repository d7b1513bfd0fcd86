"""Named queries for agents' scoped key-value state (``relay.engine.turns.commit``)."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, bindparam, or_, select
from sqlalchemy.orm import Session

from relay.core.values import Scope
from relay.store.hotpath import prepared
from relay.store.hotpath.among import among_param, values_param
from relay.store.hotpath.prepared import dialect_of, per_dialect
from relay.store.models import StateEntry

if TYPE_CHECKING:
    from relay.store.hotpath.prepared import Rows


def entries_for(
    session: Session, contact_ids: Collection[str], instance_ids: Collection[str]
) -> Rows:
    """Every app-wide entry, and those of these contacts and these instances (one
    query): rows of (scope, scope_id, key, value), read for a batch of turns'
    contexts and never changed, so no ORM objects."""
    dialect = dialect_of(session)
    params = {
        "contacts": values_param(dialect, contact_ids),
        "instances": values_param(dialect, instance_ids),
    }
    return prepared.run(session, _entries(dialect), params)


@per_dialect
def _entries(dialect: str) -> Select[Any]:
    columns = (StateEntry.scope, StateEntry.scope_id, StateEntry.key, StateEntry.value)
    return select(*columns).where(
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
