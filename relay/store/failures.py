"""What kind of failure a database error is: the database away, a conflict worth
retrying, or something wrong with what was being written.

The difference decides what relay does with it: an outage or a lock leaves
everything as it was and is tried again later (``relay serve`` answers 503, a
poll keeps its position); a deadlock or a serialization failure is retried at
once; anything else is about the data of one item, which is then stored by
itself or kept aside so that it never holds back the items after it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

T = TypeVar("T")
log = logging.getLogger("relay.store")

#: How many times a transaction the database aborted to break a conflict is run.
CONFLICT_ATTEMPTS = 4

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


class Taken(Exception):
    """The rows a transaction was to take (and delete) another process took first:
    a conflict like a deadlock, nothing about the data is wrong; run nothing again."""


def is_transient(exc: BaseException) -> bool:
    """The database is away, locked or in conflict: nothing about the data is wrong."""
    if isinstance(exc, OperationalError | InterfaceError | PoolTimeout | Taken):
        return True
    return isinstance(exc, DBAPIError) and (exc.connection_invalidated or is_conflict(exc))


def kind(exc: BaseException) -> str:
    """A short, stable name for a failure, one per cause (for one log line per kind)."""
    state = sqlstate(exc)
    name = type(getattr(exc, "orig", None) or exc).__name__
    return f"{name} ({state})" if state else name


def retry_conflicts(transaction: Callable[[], T], attempts: int = CONFLICT_ATTEMPTS) -> T:
    """Run ``transaction`` (which opens and commits its own), again when the
    database aborted it to break a deadlock or a serialization conflict: nothing
    of it was committed, and the other side has gone on by the time it runs again."""
    for attempt in range(1, attempts + 1):
        try:
            return transaction()
        except DBAPIError as exc:
            if attempt == attempts or not is_conflict(exc):
                raise
            log.info("transaction aborted (%s); running it again (%d)", kind(exc), attempt)
    raise AssertionError("unreachable")
