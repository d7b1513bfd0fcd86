"""Log lines that say what a transaction did, written when it commits.

A line such as ``instance X: WAITING_FOR_REPLY -> HEARTBEAT_SCHEDULED`` or
``message Y ... sent`` is true only once its transaction commits. Logged as the
change was made, a batch that rolled back (and was committed again one turn at
a time) left lines for transitions that never happened, and then the same
lines again. So such lines are collected on the session and written after its
commit; a rollback drops them with everything else (:mod:`relay.store.on_commit`, as
it does the event rows).

A busy daemon writes three of them per follow-up, thousands a second, and a
``logging`` record costs about 5 µs: together some 7 % of the daemon's CPU per
follow-up (``bench/log_lines.py``). Where every handler that a record of
relay's reaches formats :class:`Lines` (relay's own formatters,
:mod:`relay.runner.logs`, say so with ``formats_lines``), a transaction's lines
go as one record, and each of its lines is written exactly as a record of its
own would have been. Anywhere else (a program embedding relay with handlers of
its own, a test capturing records) each line is a record of its own, as a
direct call would make it.
"""

from __future__ import annotations

import logging
from typing import Any, NamedTuple

from sqlalchemy import event
from sqlalchemy.orm import Session

from relay.store import on_commit

_PENDING = on_commit.collection("relay_log_lines")
#: The logger the one record of a transaction's lines is written through.
_TOGETHER = logging.getLogger("relay")


class Line(NamedTuple):
    logger: str
    level: int
    text: str
    instance_id: str | None


class Lines:
    """A committed transaction's lines, the message of one record. A formatter that
    does not know it shows them one per line, each with its logger's name."""

    __slots__ = ("lines",)

    def __init__(self, lines: list[Line]) -> None:
        self.lines = lines

    def __str__(self) -> str:
        return "\n".join(f"{line.logger}: {line.text}" for line in self.lines)


def info(
    session: Session, log: logging.Logger, msg: str, *args: Any, instance_id: str | None = None
) -> None:
    """``log.info(msg, *args)`` once ``session`` commits."""
    _add(session, log, logging.INFO, msg, args, instance_id)


def warning(
    session: Session, log: logging.Logger, msg: str, *args: Any, instance_id: str | None = None
) -> None:
    """``log.warning(msg, *args)`` once ``session`` commits."""
    _add(session, log, logging.WARNING, msg, args, instance_id)


def debug(
    session: Session, log: logging.Logger, msg: str, *args: Any, instance_id: str | None = None
) -> None:
    """``log.debug(msg, *args)`` once ``session`` commits."""
    _add(session, log, logging.DEBUG, msg, args, instance_id)


def _add(
    session: Session,
    log: logging.Logger,
    level: int,
    msg: str,
    args: tuple[Any, ...],
    instance_id: str | None,
) -> None:
    if not log.isEnabledFor(level):
        return
    on_commit.add(
        session, _PENDING, Line(log.name, level, msg % args if args else msg, instance_id)
    )


def _write(session: Session) -> None:
    if not on_commit.outermost(session):
        return  # a savepoint's release: the lines wait for the commit
    lines: list[Line] = on_commit.take(session, _PENDING)
    if not lines:
        return
    if _handlers_format_lines():
        level = max(line.level for line in lines)
        record = _TOGETHER.makeRecord(_TOGETHER.name, level, "", 0, Lines(lines), (), None)
        _TOGETHER.handle(record)
        return
    for line in lines:
        extra = {"instance_id": line.instance_id} if line.instance_id else None
        logging.getLogger(line.logger).log(line.level, "%s", line.text, extra=extra)


def _handlers_format_lines() -> bool:
    """Whether a record of relay's reaches handlers, all of them with a formatter
    that writes :class:`Lines` line by line (the walk ``Logger.callHandlers`` takes)."""
    reached = False
    logger: logging.Logger | None = _TOGETHER
    while logger is not None:
        for handler in logger.handlers:
            if not getattr(handler.formatter, "formats_lines", False):
                return False
            reached = True
        if not logger.propagate:
            break
        logger = logger.parent
    return reached


event.listen(Session, "after_commit", _write)
