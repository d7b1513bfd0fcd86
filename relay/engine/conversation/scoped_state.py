"""Scoped key-value state for agents: ``app:`` keys shared by every conversation,
``contact:`` keys by every conversation with one contact, bare keys owned by one
instance, and ``temp:`` keys that live for one turn and are never stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from relay.core.values import Scope, split_scoped_key
from relay.store import state_entries
from relay.store.locked_rows import InstanceFields
from relay.store.models import StateEntry


def scope_id_of(instance: InstanceFields | Row[Any], scope: Scope) -> str:
    if scope is Scope.APP:
        return ""
    if scope is Scope.CONTACT:
        return str(instance.contact_id)
    return instance.id


def load(
    session: Session, instances: Sequence[InstanceFields | Row[Any]]
) -> dict[str, dict[str, Any]]:
    """Each instance's scoped state in one query: app keys, overridden by the
    contact's, overridden by the instance's own."""
    contacts = {scope_id_of(i, Scope.CONTACT) for i in instances}
    owns = {scope_id_of(i, Scope.INSTANCE) for i in instances}
    entries = state_entries.entries_for(session, contacts, owns)
    scoped: dict[tuple[str, str], dict[str, Any]] = {}
    for entry in entries:
        scoped.setdefault((entry.scope, entry.scope_id), {})[entry.key] = entry.value
    states = {}
    for instance in instances:
        state: dict[str, Any] = {}
        for scope in (Scope.APP, Scope.CONTACT, Scope.INSTANCE):
            state.update(scoped.get((scope.value, scope_id_of(instance, scope)), {}))
        states[instance.id] = state
    return states


def store(session: Session, instance: InstanceFields, key: str, value: Any, now: datetime) -> None:
    """Upsert one scoped key; ``temp:`` keys live for the turn only and are not stored."""
    scope, name = split_scoped_key(key)
    if scope is Scope.TEMP:
        return
    scope_id = scope_id_of(instance, scope)
    entry = state_entries.entry(session, scope.value, scope_id, name)
    if entry is None:
        try:
            with session.begin_nested():
                session.add(
                    StateEntry(
                        scope=scope.value, scope_id=scope_id, key=name, value=value, updated_at=now
                    )
                )
                session.flush()
            return
        except IntegrityError:
            # Another turn wrote the same shared key first; ours is newer.
            entry = state_entries.entry(session, scope.value, scope_id, name)
            assert entry is not None
    entry.value = value
    entry.updated_at = now
