"""``column IN (values)`` as one statement text, whatever the number of values.

A batch's ids as an ``IN`` list are one parameter each, so the statement's text
changes with the batch and is rendered anew on every call: SQLAlchemy expands
the list into fresh parameter names (about 130 microseconds for 100 ids on
SQLite, a third of such a query), and psycopg converts and caches a statement
only when it has at most 50 parameters. So the values go as one parameter:
an array on PostgreSQL (``= ANY(:values)``), a JSON array read by ``json_each``
on SQLite (``IN (SELECT value FROM json_each(:values))``). Either is one text,
cached and prepared like any other, and both plans still look each value up in
the column's index (``tests/integration/engine/test_among_plans.py`` checks
SQLite's). A SQLite built without its JSON functions (they are built in since
3.38) gets the ``IN`` list.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from contextlib import closing
from functools import cache
from typing import Any

from sqlalchemy import BindParameter, ColumnElement, any_, bindparam, func, literal_column, select
from sqlalchemy.orm import Session

#: No value: the parameter is named and given when the statement runs.
_NAMED = object()


def among(session: Session, column: Any, values: Iterable[Any]) -> ColumnElement[bool]:
    """``column`` is one of ``values`` (a batch's ids, keys, addresses: strings or
    integers)."""
    dialect = session.get_bind().dialect.name
    return among_param(dialect, column, None, values_param(dialect, values))


def among_param(
    dialect: str, column: Any, name: str | None, value: Any = _NAMED
) -> ColumnElement[bool]:
    """``column`` is one of the values of the parameter ``name`` (pass it through
    :func:`values_param`), for a statement built once (:mod:`relay.store.hotpath.prepared`)."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import ARRAY

        return column == any_(_param(name, value, type_=ARRAY(column.type)))
    if not sqlite_has_json_each():
        return column.in_(_param(name, value, expanding=True))
    each = func.json_each(_param(name, value))
    return column.in_(select(literal_column("value")).select_from(each))


def values_param(dialect: str, values: Iterable[Any]) -> Any:
    """The value of an :func:`among_param` parameter."""
    listed = list(values)
    if dialect == "postgresql" or not sqlite_has_json_each():
        return listed
    return json.dumps(listed)


def _param(name: str | None, value: Any, **kind: Any) -> BindParameter[Any]:
    """A parameter given at execution (``value`` left out) or bound now."""
    if value is _NAMED:
        return bindparam(name, **kind)
    return bindparam(name, value, **kind)


@cache
def sqlite_has_json_each() -> bool:
    """Whether the SQLite library this process uses has ``json_each``."""
    try:
        with closing(sqlite3.connect(":memory:")) as connection:
            connection.execute("SELECT value FROM json_each('[]')")
    except sqlite3.OperationalError:
        return False
    return True
