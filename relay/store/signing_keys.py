"""The store-wide secret keys that sign tokens (unsubscribe links, chat links)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from relay.store.models import StateEntry


def key_entry(session: Session, scope: str, name: str) -> StateEntry | None:
    """The store-wide state entry (no scope id) holding the key ``name``."""
    where = (StateEntry.scope == scope, StateEntry.scope_id == "", StateEntry.key == name)
    return session.scalar(select(StateEntry).where(*where))
