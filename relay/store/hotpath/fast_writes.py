"""The hot path's batch statements, executed below SQLAlchemy's per-row work.

A pulse writes its rows in batches (the heartbeats' and turns' UPDATEs by id,
the transition log, the event log, the outbox), each one ``executemany``.
Through ``session.execute(statement, rows)`` SQLAlchemy builds, for every row,
a dictionary of every bind parameter (``construct_params``), applies the
defaults and then the bind processors in a second pass, and generates the
statement's cache key on every call: about 10 % of a pulse round, several
times what the database driver's own ``executemany`` costs.

Here each statement shape (dialect, table, column keys) is compiled once by
SQLAlchemy itself, and what the compiled statement would do per row is kept:
the parameter order (SQLite's ``?``) or names (psycopg's ``%(name)s``), the
bind processors (``UTCDateTime`` to text on SQLite, JSON to text, ...) and the
scalar Python-side defaults of the columns a row leaves out (``Message.kind``).
A call then converts its rows column by column (``itemgetter``, ``map`` and
``zip``: no Python code runs per row but the bind processors) and hands them
to the session's connection with ``exec_driver_sql``: the driver's
``executemany`` in the session's transaction, with the connection's events
(``before_cursor_execute``), error wrapping (``IntegrityError``) and
disconnect handling kept. That layer costs per call, not per row (152 calls
per 2,000 follow-ups; under cProfile at most 0.05 s of a 3.5 s round besides
the driver's own time), so the DBAPI cursor is not used directly.

Like ``session.execute`` of a Core statement, a call first flushes the
session's pending ORM changes (autoflush), so a row changed on an ORM object
and then here ends up as it did before.

Every row of a call must have the same keys (the callers build them with one
function each): a missing key or an extra one raises ``ValueError`` rather than
being ignored or filled with NULL. A column left out gets its scalar
``default=``; a column whose default is a Python function is refused (no
caller relies on one).

PostgreSQL (psycopg 3) takes a batch as one statement with one array
parameter per column, in binary, unnested by the server (``INSERT ... SELECT
FROM unnest(...) WITH ORDINALITY ORDER BY``, ``UPDATE ... FROM unnest(...)``):
the statement text is fixed per shape, so psycopg prepares it once, and the
server runs one statement per batch instead of one per row. Against psycopg's
pipelined ``executemany`` of the same rows (what SQLAlchemy itself does, as its
"insertmanyvalues" serves only ``INSERT ... RETURNING``) that is a fifth to a
third of the client's CPU per row and two fifths of the server's
(``bench/pg_batch_writes.py``, ``docs/performance-history.md``).
Rows go in array order, so ids follow the rows as with ``executemany``; an
UPDATE whose batch names an id twice (applied in turn by ``executemany``, but
once, arbitrarily, by a join) takes the ``executemany`` way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter
from typing import Any
from weakref import WeakKeyDictionary

from sqlalchemy import Connection, Table, bindparam, insert, update
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Session
from sqlalchemy.sql.compiler import SQLCompiler

from relay.store.hotpath import prepared

#: The parameter an UPDATE by id takes its row's id from.
ID_KEY = "_id"
#: Shapes kept per dialect before the cache starts over (a batch has a few dozen).
MAX_SHAPES = 500


@dataclass(frozen=True, slots=True)
class Shape:
    """One compiled statement and how a row becomes its parameters.

    ``arrays``: the statement takes one array per column (PostgreSQL), executed
    once; ``rowwise`` is then the per-row statement for a batch it cannot take."""

    sql: str
    convert: _Converter
    arrays: bool = False
    rowwise: Shape | None = None


_SHAPES: WeakKeyDictionary[Dialect, dict[tuple[str, Table, tuple[str, ...]], Shape]] = (
    WeakKeyDictionary()
)


def insert_rows(session: Session, table: Table, rows: Sequence[Mapping[str, Any]]) -> int:
    """INSERT the rows with one ``executemany``; the number of rows inserted."""
    if not rows:
        return 0
    return _run(session, "insert", table, tuple(sorted(rows[0])), rows)


def update_by_id(
    session: Session, table: Table, keys: Iterable[str], rows: Sequence[Mapping[str, Any]]
) -> int:
    """UPDATE ``keys`` of rows of ``table`` by id with one ``executemany``: each
    row holds its id as ``_id`` and a value for every key. The number of rows
    the statement matched."""
    if not rows:
        return 0
    return _run(session, "update", table, tuple(sorted({*keys, ID_KEY})), rows)


def insert_rows_on(connection: Connection, table: Table, rows: Sequence[Mapping[str, Any]]) -> int:
    """:func:`insert_rows` on a connection of the caller's own (no session): on
    PostgreSQL one statement, which an autocommit connection commits by itself."""
    if not rows:
        return 0
    return _execute(connection, "insert", table, tuple(sorted(rows[0])), rows)


def _run(
    session: Session,
    kind: str,
    table: Table,
    keys: tuple[str, ...],
    rows: Sequence[Mapping[str, Any]],
) -> int:
    return _execute(prepared.connection(session), kind, table, keys, rows)


def _execute(
    connection: Connection,
    kind: str,
    table: Table,
    keys: tuple[str, ...],
    rows: Sequence[Mapping[str, Any]],
) -> int:
    shape = shape_of(connection.dialect, kind, table, keys)
    if shape.rowwise is not None and len({row.get(ID_KEY) for row in rows}) < len(rows):
        shape = shape.rowwise
    params: Any = (
        dict(zip(shape.convert.names, shape.convert.columns(rows), strict=True))
        if shape.arrays
        else shape.convert(rows)
    )
    result = connection.exec_driver_sql(shape.sql, params)
    return int(result.rowcount)


def shape_of(dialect: Dialect, kind: str, table: Table, keys: tuple[str, ...]) -> Shape:
    """The compiled shape for ``kind`` ("insert" or "update") of ``keys``."""
    shapes = _SHAPES.get(dialect)
    if shapes is None:
        shapes = _SHAPES[dialect] = {}
    found = shapes.get((kind, table, keys))
    if found is None:
        if len(shapes) >= MAX_SHAPES:
            shapes.clear()
        found = shapes[(kind, table, keys)] = _compile(dialect, kind, table, keys)
    return found


def _compile(dialect: Dialect, kind: str, table: Table, keys: tuple[str, ...]) -> Shape:
    if kind == "insert":
        statement: Any = insert(table)
    elif kind == "update":
        columns = [key for key in keys if key != ID_KEY]
        statement = (
            update(table)
            .where(table.c.id == bindparam(ID_KEY))
            .values({key: bindparam(key) for key in columns})
        )
    else:
        raise ValueError(f"unknown statement kind {kind!r}")
    # As Connection.execute compiles an executemany of rows with these keys.
    compiled = statement.compile(dialect=dialect, column_keys=list(keys), for_executemany=True)
    assert isinstance(compiled, SQLCompiler)
    defaults = _defaults(compiled, keys)
    if compiled.positional:
        assert compiled.positiontup is not None
        names = tuple(compiled.positiontup)
    else:
        names = tuple(compiled.bind_names.values())
    unknown = set(names) - set(keys) - set(defaults)
    missing = set(keys) - set(names)
    if unknown or missing or len(set(names)) != len(names):
        raise ValueError(
            f"{kind} on {table.name}: parameters {sorted(names)} do not match keys {sorted(keys)}"
        )
    processors: Mapping[str, Callable[[Any], Any]] = compiled._bind_processors  # type: ignore[assignment]
    convert = _Converter(names, keys, defaults, processors, positional=compiled.positional)
    rowwise = Shape(compiled.string, convert)
    if dialect.name != "postgresql":
        return rowwise
    # One statement over arrays, its parameters column by column (_Converter.columns);
    # an UPDATE keeps the row-by-row statement for a batch naming an id twice.
    by_column = _Converter(names, keys, defaults, processors, positional=True)
    fallback = rowwise if kind == "update" else None
    return Shape(_unnest(dialect, kind, table, names), by_column, True, fallback)


def _unnest(dialect: Dialect, kind: str, table: Table, names: tuple[str, ...]) -> str:
    """The one-statement form of a batch on PostgreSQL: a binary array per column
    (``%(name)b``), typed as the column is, unnested in order."""
    column = {name: table.c.id if name == ID_KEY else table.c[name] for name in names}
    arrays = ", ".join(
        f"%({name})b::{column[name].type.compile(dialect=dialect)}[]" for name in names
    )
    aliases = ", ".join(f"v{index}" for index in range(len(names)))
    rows = f"unnest({arrays}) WITH ORDINALITY AS v({aliases}, n)"
    targets = {name: f"v{index}" for index, name in enumerate(names)}
    if kind == "insert":
        into = ", ".join(f'"{column[name].name}"' for name in names)
        picked = ", ".join(targets[name] for name in names)
        return f'INSERT INTO "{table.name}" ({into}) SELECT {picked} FROM {rows} ORDER BY n'
    sets = ", ".join(f'"{column[name].name}" = {targets[name]}' for name in names if name != ID_KEY)
    matched = f'"{table.name}".id = {targets[ID_KEY]}'
    return f'UPDATE "{table.name}" SET {sets} FROM {rows} WHERE {matched}'


def _defaults(compiled: SQLCompiler, keys: tuple[str, ...]) -> dict[str, Any]:
    """The scalar Python-side defaults the statement fills in for every row (the
    columns the rows leave out), by parameter name."""
    if (
        compiled.literal_execute_params
        or compiled.post_compile_params
        or compiled.escaped_bind_names
        or compiled.schema_translate_map
        or compiled.returning
    ):
        raise ValueError(f"statement not supported by fast_writes: {compiled.string}")
    found: dict[str, Any] = {}
    for column in (*compiled.insert_prefetch, *compiled.update_prefetch):
        default = column.default if compiled.insert_prefetch else column.onupdate
        if default is None or not default.is_scalar:
            raise ValueError(
                f"column {column.key!r} has a default computed per row; "
                f"pass it in every row (keys: {list(keys)})"
            )
        found[compiled._within_exec_param_key_getter(column)] = default.arg  # type: ignore[attr-defined]
    return found


class _Converter:
    """Rows to parameters: a tuple in ``names`` order per row when positional,
    else a dict by name, with the processors applied and the defaults added,
    as ``DefaultExecutionContext._init_compiled`` builds them."""

    def __init__(
        self,
        names: tuple[str, ...],
        keys: tuple[str, ...],
        defaults: Mapping[str, Any],
        processors: Mapping[str, Callable[[Any], Any]],
        *,
        positional: bool,
    ) -> None:
        self.names = names
        self.keys = keys
        self.positional = positional
        from_rows = [name for name in names if name not in defaults]
        self.single = len(from_rows) == 1
        self.get = itemgetter(*from_rows)
        # By position in ``names``: a processor to apply, or a constant to add.
        self.steps: list[tuple[int, Callable[[Any], Any] | None, Any]] = []
        for index, name in enumerate(names):
            processor = processors.get(name)
            if name in defaults:
                value = defaults[name]
                self.steps.append((index, None, processor(value) if processor else value))
            elif processor is not None:
                self.steps.append((index, processor, None))

    def __call__(self, rows: Sequence[Mapping[str, Any]]) -> list[Any]:
        values = self._values(rows)
        if self.steps:
            values = list(zip(*self._processed(values, len(rows)), strict=True))
        if self.positional:
            return values
        return list(map(dict, map(zip, repeat(self.names), values)))

    def columns(self, rows: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
        """The parameters column by column, in ``names`` order (PostgreSQL's arrays)."""
        values = self._values(rows)
        return list(map(list, self._processed(values, len(rows))))

    def _processed(self, values: list[tuple[Any, ...]], count: int) -> list[Iterable[Any]]:
        """Column by column, the processors applied and the defaults added: the
        processors run through map(), with no Python code per row around them."""
        columns: list[Iterable[Any]] = list(zip(*values, strict=True))
        for index, processor, constant in self.steps:
            if processor is None:
                columns.insert(index, repeat(constant, count))
            else:
                columns[index] = map(processor, columns[index])
        return columns

    def _values(self, rows: Sequence[Mapping[str, Any]]) -> list[tuple[Any, ...]]:
        """Each row's values in parameter order, every row checked for its keys."""
        if set(map(len, rows)) != {len(self.keys)}:
            odd = next((row for row in rows if len(row) != len(self.keys)), rows[0])
            raise ValueError(f"every row must have the keys {list(self.keys)}; got {sorted(odd)}")
        try:
            values = list(map(self.get, rows))
        except KeyError as exc:
            raise ValueError(
                f"every row must have the keys {list(self.keys)}; one has no {exc.args[0]!r}"
            ) from None
        return [(value,) for value in values] if self.single else values
