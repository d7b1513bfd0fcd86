"""Logging of the long-running processes (``relay daemon``, ``relay serve``):
text or one JSON object per line, on stderr or in an owner-only file, secrets
masked.

A busy daemon writes a few lines per follow-up, thousands a second, so a line's
own cost counts (it was about a seventh of the daemon's busy time): the time
stamp is formatted once a second, the message once, and a log file is flushed
once per pulse rather than once per line (:func:`held`).
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from json.encoder import encode_basestring_ascii as _json_text
from pathlib import Path

from relay.core.errors import InvalidInput
from relay.core.secrets import mask_text
from relay.runner.process import private_dir, private_open
from relay.store.commit_log import Line, Lines


class _SecondStamp(logging.Formatter):
    """The time stamp has whole seconds; a busy second's hundreds of lines share
    one ``strftime``. Formatting runs under the handler's lock. Times are UTC
    (the stamp ends in ``Z``) whatever the process's time zone."""

    converter = staticmethod(time.gmtime)
    #: A record whose message is :class:`Lines` is written one line per line
    #: (:mod:`relay.store.commit_log` sends a transaction's lines as one record).
    formats_lines = True
    _second = -1
    _stamp = ""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        second = int(record.created)
        if second != self._second:
            self._stamp = super().formatTime(record, datefmt)
            self._second = second
        return self._stamp


class JsonFormatter(_SecondStamp):
    """One JSON object per line; ``instance_id`` is a field of its own when the
    call site passed it (``extra={"instance_id": ...}``): parsing it out of the
    message would break with the wording and could pick up contact text.

    The line is what ``json.dumps`` makes of the same fields, in the same order,
    written out by hand: only the strings need encoding."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = self.formatTime(record, "%Y-%m-%dT%H:%M:%S")
        if isinstance(record.msg, Lines):
            pid = record.process
            return "\n".join(
                self._line(stamp, line.level, line.logger, line.text, pid, line.instance_id)
                for line in record.msg.lines
            )
        error = None
        if record.exc_info:
            error = self.formatException(record.exc_info).splitlines()[-1]
        found = getattr(record, "instance_id", None)
        return self._line(
            stamp, record.levelno, record.name, record.getMessage(), record.process, found, error
        )

    @staticmethod
    def _line(
        stamp: str,
        level: int,
        logger: str,
        message: str,
        pid: int | None,
        found: str | None,
        error: str | None = None,
    ) -> str:
        line = (
            f'{{"time": "{stamp}Z", '
            f'"level": {_json_text(logging.getLevelName(level).lower())}, '
            f'"logger": {_json_text(logger)}, '
            f'"message": {_json_text(message)}, "pid": {_json_int(pid)}'
        )
        if found:
            line += f', "instance_id": {_json_text(str(found))}'
        if error is not None:
            line += f', "error": {_json_text(error)}'
        return line + "}"


def _json_int(value: int | None) -> str:
    return "null" if value is None else str(value)


class _TextFormatter(_SecondStamp):
    def __init__(self) -> None:
        super().__init__("%(asctime)sZ %(levelname)s %(name)s: %(message)s", "%Y-%m-%dT%H:%M:%S")

    def format(self, record: logging.LogRecord) -> str:
        if not isinstance(record.msg, Lines):
            return super().format(record)
        stamp = self.formatTime(record, self.datefmt)
        return "\n".join(
            f"{stamp}Z {logging.getLevelName(line.level)} {line.logger}: {line.text}"
            for line in record.msg.lines
        )


class _HeldFile(logging.FileHandler):
    """A log file whose lines are flushed when a pulse ends (:func:`held`), not one
    ``write(2)`` each. A warning or an error is flushed at once, and the buffer
    (8 KiB) when it fills: a killed daemon loses at most the routine lines of
    the pulse it was in, which the store records anyway."""

    def flush(self) -> None:
        if not _holding.active:
            super().flush()

    def emit(self, record: logging.LogRecord) -> None:
        super().emit(record)
        if record.levelno >= logging.WARNING and _holding.active:
            super().flush()


class _Holding:
    """How many pulses hold the flushes (one at a time in a daemon; a counter
    keeps nested or concurrent holds correct)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0

    @property
    def active(self) -> bool:
        return self.depth > 0


_holding = _Holding()


@contextmanager
def held() -> Iterator[None]:
    """Within, relay's log files flush no line by line; at the end, they flush."""
    with _holding.lock:
        _holding.depth += 1
    try:
        yield
    finally:
        with _holding.lock:
            _holding.depth -= 1
        for handler in logging.getLogger("relay").handlers:
            handler.flush()


def _lean_records() -> None:
    """Skip what relay's formats never show: the calling function and line (a
    walk up the stack per line), the thread and the multiprocessing names.
    These are process-wide switches (the logging HOWTO's "Optimization")."""
    logging._srcfile = None
    logging.logThreads = False
    logging.logMultiprocessing = False


def configure_logging(
    fmt: str, verbose: bool, log_file: Path | None, *, owns_process: bool = False
) -> None:
    """Send relay's log (and APScheduler's warnings) to stderr or ``log_file``.

    ``owns_process``: the caller is ``relay daemon`` or ``relay serve`` and the
    process is relay's, so process-wide logging switches that make each line
    cheaper may be set too; a program embedding relay keeps its own."""
    if fmt not in ("text", "json"):
        raise InvalidInput(f"--log-format must be text or json, not {fmt!r}")
    handler: logging.Handler = (
        _HeldFile(_private_log(log_file)) if log_file else logging.StreamHandler(sys.stderr)
    )
    handler.setFormatter(JsonFormatter() if fmt == "json" else _TextFormatter())
    root = logging.getLogger("relay")
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    scheduler_log = logging.getLogger("apscheduler")
    scheduler_log.setLevel(logging.INFO if verbose else logging.WARNING)
    scheduler_log.handlers[:] = [handler]
    scheduler_log.propagate = False
    handler.addFilter(_mask_secrets)
    if not verbose:
        handler.addFilter(_expected_overrun)
    if owns_process:
        _lean_records()


def _mask_secrets(record: logging.LogRecord) -> bool:
    """A URL with a password (a database, a webhook) may reach an error message.

    The masked text replaces the message and its arguments, so the formatter
    does not build the message a second time."""
    if isinstance(record.msg, Lines):
        record.msg = Lines([_masked(line) for line in record.msg.lines])
    else:
        record.msg, record.args = mask_text(record.getMessage()), None
    return True


def _masked(line: Line) -> Line:
    text = mask_text(line.text)
    return line if text is line.text else line._replace(text=text)


def _private_log(path: Path) -> Path:
    """Create the log file owner-only before logging opens it: it names contacts."""
    private_dir(path.parent)
    private_open(path).close()
    return path


def _expected_overrun(record: logging.LogRecord) -> bool:
    """Drop APScheduler's warning that a pulse was skipped because the previous one
    is still running: with ``max_instances=1`` that is how a long pulse is meant
    to end (the next one is brought forward as soon as it finishes)."""
    return not (
        record.name.startswith("apscheduler")
        and "maximum number of running instances" in record.getMessage()
    )
