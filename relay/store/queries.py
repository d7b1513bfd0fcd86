"""Named queries over the store that belong to no noun's module: a unique index's
violation, todos, counts by a column, a conversation's state changes.

Reads return Core rows of :mod:`relay.store.tables`. The queries whose caller
changes what it gets (todos) return the ORM's objects and import
:mod:`relay.store.models` where they run, so that a read command never loads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from sqlalchemy import Row, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from relay.store.hotpath import prepared
from relay.store.hotpath.among import among, among_param
from relay.store.hotpath.prepared import per_dialect
from relay.store.tables import (
    CONTACT_SLOT_INDEX,
    events,
    todos,
)

if TYPE_CHECKING:
    from relay.store.hotpath.prepared import AnySelect
    from relay.store.models import Todo


def is_violation(exc: IntegrityError, name: str, column: str) -> bool:
    """Whether ``exc`` broke the named unique index (PostgreSQL) or its column (SQLite)."""
    diag = getattr(exc.orig, "diag", None)
    if diag is not None and getattr(diag, "constraint_name", None):
        return diag.constraint_name == name
    return column in str(exc.orig)


def is_slot_violation(exc: IntegrityError) -> bool:
    return is_violation(exc, CONTACT_SLOT_INDEX, "instances.contact_slot")


def todos_for(session: Session, instance_ids: Sequence[str]) -> dict[str, list[Todo]]:
    from relay.store.models import Todo

    found: dict[str, list[Todo]] = {i: [] for i in instance_ids}
    for todo in session.scalars(
        select(Todo).where(among(session, Todo.instance_id, instance_ids)).order_by(Todo.position)
    ):
        found[todo.instance_id].append(todo)
    return found


#: What a turn's context reads of a todo: the answer wanted and recorded.
TODO_CONTEXT_COLUMNS = (
    todos.c.instance_id,
    todos.c.position,
    todos.c.text,
    todos.c.status,
    todos.c.answer_kind,
    todos.c.answer_spec,
    todos.c.required,
    todos.c.answer,
)


def todo_rows_for(
    session: Session, instance_ids: Sequence[str], *, whole: bool = False
) -> dict[str, list[Any]]:
    """:func:`todos_for` as read-only rows of :data:`TODO_CONTEXT_COLUMNS` (``whole``:
    every column, for the views)."""
    found: dict[str, list[Any]] = {i: [] for i in instance_ids}
    for row in prepared.batch(session, partial(_todo_rows, whole=whole), instance_ids):
        found[row.instance_id].append(row)
    return found


@per_dialect
def _todo_rows(dialect: str, whole: bool) -> AnySelect:
    columns = todos.c if whole else TODO_CONTEXT_COLUMNS
    return (
        select(*columns)
        .where(among_param(dialect, todos.c.instance_id, "ids"))
        .order_by(todos.c.position)
    )


def count_by(session: Session, column: Any, *where: Any) -> dict[str, int]:
    rows = session.execute(select(column, func.count()).where(*where).group_by(column)).all()
    return {str(key): int(count) for key, count in rows}


# -- threads ----------------------------------------------------------------------------------


def history_of(session: Session, instance_id: str) -> Sequence[Row[Any]]:
    """The conversation's state changes, oldest first (its rows of the record that
    have a ``to_state``)."""
    return session.execute(
        select(events)
        .where(events.c.instance_id == instance_id, events.c.to_state.is_not(None))
        .order_by(events.c.id)
    ).all()


def latest_reasons(session: Session, instance_ids: Sequence[str]) -> dict[str, str]:
    """Each instance's latest state change's reason (why it is where it is), one query."""
    if not instance_ids:
        return {}
    latest = (
        select(func.max(events.c.id))
        .where(events.c.instance_id.in_(instance_ids), events.c.to_state.is_not(None))
        .group_by(events.c.instance_id)
    )
    rows = session.execute(
        select(events.c.instance_id, events.c.reason).where(events.c.id.in_(latest))
    )
    return {instance_id: reason for instance_id, reason in rows if reason}
