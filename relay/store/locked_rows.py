"""Instances a daemon's batch changes, as plain objects written back with one
statement per shape of change.

The ORM's unit of work costs more per row than the rest of what a follow-up
does in Python: loading an instance into the identity map, the instrumented
attribute sets and the flush that collects them came to about a quarter of a
follow-up's time (``docs/performance.md``). The hot path (a pulse's heartbeat
firings, turn claims and turn commits) therefore locks its instances as
:class:`InstanceRow`: plain attributes and a copy of what was read.
:func:`write` sends what changed as one ``executemany`` UPDATE per set of
changed columns, before the transaction commits.

The state machine takes either kind (:data:`InstanceFields`), so there is one
copy of it. Two rules keep a plain row honest, since no session tracks it:

- it is written (:func:`write_now`) before anything in the same transaction
  reads its row from the database (the slot check when a conversation ends, an
  opt-out loading the contact's conversations);
- it is written before its transaction commits (the caller's last step).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, TypeAlias

from sqlalchemy import Select, bindparam, select, update
from sqlalchemy.orm import Session

from relay.store.models import Instance, table_of

#: Columns a batch never reads (long text, JSON): the turn context reads them
#: as rows of its own when an agent needs them.
_NOT_LOADED = frozenset({"objective", "subject", "meta", "result_schema", "template"})

_TABLE = table_of(Instance)
COLUMNS = tuple(column for column in _TABLE.c if column.key not in _NOT_LOADED)
_KEYS = tuple(column.key for column in COLUMNS)
_UNREAD = object()


class InstanceRow:
    """A locked instance as plain attributes (the columns below), with what was
    read kept to compare."""

    seq: int
    id: str
    contact_id: int
    contact_slot: int | None
    state: str
    previous_state: str | None
    channel: str
    agent: str
    window: str | None
    heartbeat_seconds: int
    max_followups: int
    follow_up_count: int
    next_heartbeat_at: datetime | None
    heartbeat_remaining_seconds: int | None
    heartbeat_override_seconds: int | None
    paused_until: datetime | None
    not_before: datetime | None
    failure_reason: str | None
    end_reason: str | None
    version: int
    lease_owner: str | None
    lease_expires_at: datetime | None
    turn_attempts: int
    created_at: datetime
    updated_at: datetime
    ended_at: datetime | None
    campaign: str | None
    import_key: str | None
    outcome: str | None
    first_delivered_at: datetime | None
    first_reply_at: datetime | None
    reply_seconds: float | None
    followups_sent: int

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.__dict__.update(values)
        self._read = dict(values)

    def take_changes(self) -> dict[str, Any]:
        """The columns set to new values since the row was read or last written;
        from now on they count as written."""
        read = self._read
        changed = {
            key: value
            for key, value in self.__dict__.items()
            if key != "_read" and read.get(key, _UNREAD) != value
        }
        read.update(changed)
        return changed

    def __repr__(self) -> str:
        return f"InstanceRow(id={self.id!r}, state={self.state!r}, version={self.version})"


#: What the state machine takes: either kind of instance has the columns it uses.
InstanceFields: TypeAlias = Instance | InstanceRow


def selecting() -> Select[Any]:
    """``SELECT`` of the loaded columns (add the WHERE, order and lock)."""
    return select(*COLUMNS)


def rows(session: Session, query: Select[Any]) -> list[InstanceRow]:
    """Run a :func:`selecting` query: one plain row per instance."""
    return [InstanceRow(dict(zip(_KEYS, values, strict=True))) for values in session.execute(query)]


def write(session: Session, changed: Iterable[InstanceFields]) -> None:
    """Write what changed on plain rows: one ``executemany`` per set of changed
    columns (a batch of firings changes the same columns of every row: one
    statement). ORM instances among them are left to the session's flush."""
    shapes: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for row in changed:
        if not isinstance(row, InstanceRow):
            continue
        changes = row.take_changes()
        if changes:
            shape = tuple(sorted(changes))
            changes["_id"] = row.id
            shapes.setdefault(shape, []).append(changes)
    for shape, params in shapes.items():
        statement = (
            update(_TABLE)
            .where(_TABLE.c.id == bindparam("_id"))
            .values({key: bindparam(key) for key in shape})
        )
        session.execute(statement, params)


def write_now(session: Session, instance: InstanceFields) -> None:
    """Make the instance's changes visible to the transaction's next queries."""
    if isinstance(instance, InstanceRow):
        write(session, [instance])
    else:
        session.flush()
