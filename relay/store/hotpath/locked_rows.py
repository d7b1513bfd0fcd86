"""Rows a daemon's batch changes, as plain objects written back with one
statement per shape of change.

The ORM's unit of work costs more per row than the rest of what a follow-up
does in Python: loading a row into the identity map, the instrumented
attribute sets and the flush that collects them came to about a quarter of a
follow-up's time (``docs/performance-history.md``). The hot path (a pulse's turn
claims, turn commits and outbox claims) therefore locks its instances and
messages as :class:`InstanceRow` and :class:`MessageRow`: plain attributes and
a copy of what was read. :func:`write` sends what changed as one
``executemany`` UPDATE per table and set of changed columns. A batch that one
event moves the same way (a pulse's heartbeat firings) reads no row at all:
:func:`move_instances` writes it with one UPDATE.

The state machine and the delivery gate take either kind
(:data:`InstanceFields`, :data:`MessageFields`), so there is one copy of each.
Two rules keep a plain row honest, since no session tracks it:

- it is written (:func:`write_now`) before anything in the same transaction
  reads its row from the database (the slot check when a conversation ends, an
  opt-out loading the contact's conversations);
- it is written before its transaction commits (the caller's last step).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias, TypeVar

from sqlalchemy import Column, Select, Table, Update, bindparam, select, update
from sqlalchemy.orm import Session

from relay.store import tables
from relay.store.database import affected
from relay.store.hotpath import fast_writes, prepared
from relay.store.hotpath.among import among_param, values_param

if TYPE_CHECKING:
    from relay.store.models import Instance, Message

_UNREAD = object()


class PlainRow:
    """A locked row as plain attributes, with what was read kept to compare."""

    # What was read lives outside the attributes' __dict__, so that comparing
    # them (take_changes, 4 times per follow-up) skips no key.
    __slots__ = ("__dict__", "_read")

    table: ClassVar[Table]
    #: The columns loaded (long text and JSON a batch never reads are left out).
    columns: ClassVar[tuple[Column[Any], ...]]

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.__dict__.update(values)
        self._read = dict(values)

    def take_changes(self) -> dict[str, Any]:
        """The columns set to new values since the row was read or last written;
        from now on they count as written."""
        read = self._read
        changed = {
            key: value for key, value in self.__dict__.items() if read.get(key, _UNREAD) != value
        }
        read.update(changed)
        return changed

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._read.get('id')!r})"


def _loaded(table: Table, *skipped: str) -> tuple[Column[Any], ...]:
    return tuple(column for column in table.c if column.key not in skipped)


class InstanceRow(PlainRow):
    table = tables.instances
    columns = _loaded(table, "objective", "subject", "meta", "result_schema", "template")

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
    approval: str | None
    drafts_pending: int
    ladder: list[Any] | None
    fallback_seconds: int | None


class MessageRow(PlainRow):
    table = tables.messages
    columns = _loaded(table, "raw", "refs", "note", "intent", "intent_date")

    id: int
    instance_id: str | None
    contact_id: int
    direction: str
    author: str
    body: str
    status: str
    channel: str | None
    kind: str
    delivery_status: str | None
    delivery_updated_at: datetime | None
    idempotency_key: str | None
    provider_message_id: str | None
    attempts: int
    next_attempt_at: datetime | None
    lease_owner: str | None
    proactive: int
    last_error: str | None
    bounce_reason: str | None
    created_at: datetime
    sent_at: datetime | None
    processed_at: datetime | None


#: What the state machine takes: either kind of instance has the columns it uses.
InstanceFields: TypeAlias = "Instance | InstanceRow"
#: What the delivery gate takes: either kind of outbox row.
MessageFields: TypeAlias = "Message | MessageRow"

R = TypeVar("R", bound=PlainRow)


def selecting(kind: type[PlainRow]) -> Select[Any]:
    """``SELECT`` of the loaded columns (add the WHERE, order and lock)."""
    return select(*kind.columns)


def rows(session: Session, kind: type[R], query: Select[Any], params: Mapping[str, Any]) -> list[R]:
    """Run a :func:`selecting` query (built once: :mod:`relay.store.hotpath.prepared`) with
    ``params``: one plain row per result row."""
    keys = [column.key for column in kind.columns]
    found = prepared.run(session, query, params)
    return [kind(dict(zip(keys, values, strict=True))) for values in found]


def write(session: Session, changed: Iterable[object]) -> None:
    """Write what changed on plain rows: one ``executemany`` per table and set of
    changed columns (a batch of turn claims changes the same columns of every
    row: one statement). ORM objects among them are left to the session's flush."""
    shapes: dict[tuple[Table, tuple[str, ...]], list[dict[str, Any]]] = {}
    for row in changed:
        if not isinstance(row, PlainRow):
            continue
        changes = row.take_changes()
        if changes:
            shape = (row.table, tuple(sorted(changes)))
            changes[fast_writes.ID_KEY] = row._read["id"]
            shapes.setdefault(shape, []).append(changes)
    for (table, keys), params in shapes.items():
        fast_writes.update_by_id(session, table, keys, params)


def move_instances(session: Session, instance_ids: Sequence[str], values: Mapping[str, Any]) -> int:
    """Give several locked instances the same ``values`` and a new version each, with
    one UPDATE: a batch that one event moves the same way (a pulse's heartbeat
    firings, :func:`relay.engine.conversation.transitions.fire_waiting`) needs no row read,
    compared and written back per instance. The number of rows updated."""
    if not instance_ids:
        return 0
    dialect = prepared.dialect_of(session)
    statement = _moving(dialect, tuple(sorted(values)))
    params = {f"set_{key}": value for key, value in values.items()}
    params["ids"] = values_param(dialect, instance_ids)
    return affected(prepared.connection(session).execute(statement, params))


@prepared.per_dialect
def _moving(dialect: str, keys: tuple[str, ...]) -> Update:
    columns = tables.instances.c
    return (
        update(tables.instances)
        .where(among_param(dialect, columns.id, "ids"))
        .values(
            version=columns.version + 1,
            **{key: bindparam(f"set_{key}", type_=columns[key].type) for key in keys},
        )
    )


def write_now(session: Session, row: object) -> None:
    """Make the row's changes visible to the transaction's next queries."""
    if isinstance(row, PlainRow):
        write(session, [row])
    else:
        session.flush()
