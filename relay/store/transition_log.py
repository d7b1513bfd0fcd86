"""The transition log's batch insert (single rows are ORM objects added to the session)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.orm import Session

from relay.store import fast_writes
from relay.store.models import Transition, table_of


def insert_transitions(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Insert collected transition-log rows with one statement (every row with the
    same keys: :mod:`relay.store.fast_writes`)."""
    fast_writes.insert_rows(session, table_of(Transition), rows)
