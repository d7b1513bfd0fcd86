"""The hot path's SELECTs: built once per dialect, run as Core statements.

A pulse runs a few dozen batch queries (claims, locks, a turn's context, the
delivery facts). Building one anew per call (its clauses, operators and
parameters; SQLAlchemy then derives its cache key from the whole tree) and
running it through the ORM session (compile state, the ORM's result wrapping)
cost more than the database's own work for it: in a profile of the daemon,
SQLAlchemy's statement building was 13 % of its busy time and the ORM's
execution layer 6 %. A statement built once, with named parameters for what
changes (``now``, ``limit``, a batch's ids through
:func:`relay.store.hotpath.among.among_param`), is a hit in the engine's compiled
cache every time, and a Core execution skips the ORM's layer.

A builder takes the dialect's name (and any flags that change the statement's
shape) and is memoised on them: :func:`per_dialect`. :func:`run` executes on
the session's connection after the autoflush ``session.execute`` would do, so
pending ORM changes are seen as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any, ParamSpec, TypeAlias, TypeVar

from sqlalchemy import Connection, Executable, Row, Select
from sqlalchemy.orm import Session

from relay.store.hotpath.among import values_param

if TYPE_CHECKING:
    #: Rows of any columns (SQLAlchemy 2.1 types a row by its columns' types;
    #: for type checkers only, as 2.0's classes take one type parameter).
    Rows: TypeAlias = Sequence[Row[*tuple[Any, ...]]]
    #: A built SELECT of any columns.
    AnySelect: TypeAlias = Select[*tuple[Any, ...]]

P = ParamSpec("P")
S = TypeVar("S", bound=Executable)


def per_dialect(build: Callable[P, S]) -> Callable[P, S]:
    """Memoise a statement builder on its arguments (the dialect's name first, then
    flags): a handful of shapes each, built on first use."""
    return cache(build)  # type: ignore[return-value]


def dialect_of(session: Session) -> str:
    return session.get_bind().dialect.name


def connection(session: Session) -> Connection:
    """The session's connection, for a statement run below the ORM, with the
    session's pending ORM changes flushed first, as ``session.execute`` would."""
    if session.autoflush:
        session.flush()
    return session.connection()


def run(session: Session, statement: Executable, params: Mapping[str, Any]) -> Rows:
    """Execute a built statement in the session's transaction; its rows fetched at
    once (one driver call, not one per row as iterating the result does)."""
    return connection(session).execute(statement, params).all()


def batch(
    session: Session,
    build: Callable[[str], Executable],
    values: Iterable[Any],
    **params: Any,
) -> Rows:
    """Run the statement ``build`` makes for the session's dialect, its ``ids``
    parameter (:func:`relay.store.hotpath.among.among_param`) holding a batch's ``values``."""
    dialect = dialect_of(session)
    return run(session, build(dialect), {"ids": values_param(dialect, values), **params})


def batch_params(session: Session, values: Iterable[Any], **params: Any) -> dict[str, Any]:
    """The parameters of :func:`batch`, for a statement the ORM session runs (one that
    loads mapped objects)."""
    return {"ids": values_param(dialect_of(session), values), **params}
