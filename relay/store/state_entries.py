"""Named queries for agents' scoped key-value state (``relay.engine.scoped_state``)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from relay.core.values import Scope
from relay.store.among import among
from relay.store.models import StateEntry


def entries_for(
    session: Session, contact_ids: Collection[str], instance_ids: Collection[str]
) -> Sequence[StateEntry]:
    """Every app-wide entry, and those of these contacts and these instances (one query)."""
    return session.scalars(
        select(StateEntry).where(
            or_(
                StateEntry.scope == Scope.APP.value,
                (StateEntry.scope == Scope.CONTACT.value)
                & among(session, StateEntry.scope_id, contact_ids),
                (StateEntry.scope == Scope.INSTANCE.value)
                & among(session, StateEntry.scope_id, instance_ids),
            )
        )
    ).all()


def entry(session: Session, scope: str, scope_id: str, key: str) -> StateEntry | None:
    """One stored key of one scope, or None."""
    return session.scalar(
        select(StateEntry).where(
            StateEntry.scope == scope,
            StateEntry.scope_id == scope_id,
            StateEntry.key == key,
        )
    )
