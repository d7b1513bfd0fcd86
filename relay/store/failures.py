"""What kind of failure a database error is: the database away, a conflict worth
retrying, or something wrong with what was being written.

The difference decides what relay does with it: an outage or a lock leaves
everything as it was and is tried again later (``relay serve`` answers 503, a
poll keeps its position); a deadlock or a serialization failure is retried at
once; anything else is about the data of one item, which is then stored by
itself or kept aside so that it never holds back the items after it.
"""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

#: SQLSTATEs of a transaction the database aborted to break a conflict:
#: serialization_failure, deadlock_detected.
RETRYABLE_STATES = frozenset({"40001", "40P01"})


def sqlstate(exc: BaseException) -> str | None:
    """The SQLSTATE of a PostgreSQL error (psycopg's ``sqlstate``), else None."""
    orig = getattr(exc, "orig", None)
    return getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)


def is_conflict(exc: BaseException) -> bool:
    """A deadlock or serialization failure: running the transaction again can succeed."""
    return isinstance(exc, DBAPIError) and sqlstate(exc) in RETRYABLE_STATES


def is_transient(exc: BaseException) -> bool:
    """The database is away, locked or in conflict: nothing about the data is wrong."""
    if isinstance(exc, OperationalError | InterfaceError | PoolTimeout):
        return True
    return isinstance(exc, DBAPIError) and (exc.connection_invalidated or is_conflict(exc))


def kind(exc: BaseException) -> str:
    """A short, stable name for a failure, one per cause (for one log line per kind)."""
    state = sqlstate(exc)
    name = type(getattr(exc, "orig", None) or exc).__name__
    return f"{name} ({state})" if state else name
