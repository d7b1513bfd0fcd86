"""What a transaction collects on its session to write at its commit: the event
rows (:mod:`relay.store.events`, inserted just before it) and the log lines
(:mod:`relay.store.commit_log`, written just after).

Savepoints (``session.begin_nested()``: claiming a contact's slot, creating a
key a concurrent transaction may create first) fire the same session events as
the transaction itself, so both are told apart here:

- a savepoint that rolls back drops what was collected within it, and only
  that (the transaction goes on, and what it collected before still counts);
- a savepoint that is released is not the commit: :func:`outermost` says when
  a ``before_commit``/``after_commit`` listener has the real one;
- when the transaction ends, committed or rolled back, whatever is left is
  dropped.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Session, SessionTransaction

_KEYS: set[str] = set()
#: Per open savepoint, how long each collection was when it began.
_MARKS = "relay_on_commit_marks"


def collection(key: str) -> str:
    """Name a collection (a ``session.info`` key) kept by these rules."""
    _KEYS.add(key)
    return key


def add(session: Session, key: str, item: Any) -> None:
    session.info.setdefault(key, []).append(item)


def collected(session: Session, key: str) -> list[Any]:
    """What was collected so far, left in place."""
    return list(session.info.get(key, ()))


def take(session: Session, key: str) -> list[Any]:
    """What was collected, removed from the session (written once)."""
    return session.info.pop(key, None) or []


def outermost(session: Session) -> bool:
    """Whether a commit listener sees the transaction's own commit, not a
    savepoint's release."""
    return not session.in_nested_transaction()


def _mark(session: Session, transaction: SessionTransaction) -> None:
    if transaction.nested:
        lengths = {key: len(session.info.get(key, ())) for key in _KEYS}
        session.info.setdefault(_MARKS, {})[transaction] = lengths


def _undo(session: Session, transaction: SessionTransaction) -> None:
    marks = session.info.get(_MARKS, {}).pop(transaction, None) if transaction.nested else None
    if marks is None:
        return
    for key, length in marks.items():
        if key in session.info:
            del session.info[key][length:]


def _end(session: Session, transaction: SessionTransaction) -> None:
    if transaction.parent is None:
        for key in (*_KEYS, _MARKS):
            session.info.pop(key, None)


event.listen(Session, "after_transaction_create", _mark)
event.listen(Session, "after_soft_rollback", _undo)
event.listen(Session, "after_transaction_end", _end)
