"""``column IN (values)`` that PostgreSQL's driver can cache.

psycopg converts and caches a statement's text only when it has at most 50
parameters; an ``IN`` list of a batch's 100 ids (one parameter each) is parsed
anew on every call, as is a list of any new length. On PostgreSQL the batch's
values go as one array parameter instead (``= ANY(:values)``): one statement
text whatever the batch size, cached and prepared like any other. SQLite has
no arrays and no such cost: it keeps ``IN``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import ColumnElement, any_, bindparam
from sqlalchemy.orm import Session


def among(session: Session, column: Any, values: Iterable[Any]) -> ColumnElement[bool]:
    """``column`` is one of ``values`` (a batch's ids, keys, addresses)."""
    listed = list(values)
    if session.get_bind().dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import ARRAY

        return column == any_(bindparam(None, listed, type_=ARRAY(column.type)))
    return column.in_(listed)
