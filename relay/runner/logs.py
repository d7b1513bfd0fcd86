"""Logging of the long-running processes (``relay daemon``, ``relay serve``):
text or one JSON object per line, on stderr or in an owner-only file, secrets
masked.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

from relay.core.errors import InvalidInput
from relay.runner.process import private_dir, private_open


class JsonFormatter(logging.Formatter):
    """One JSON object per line; ``instance_id`` is a field of its own when the
    call site passed it (``extra={"instance_id": ...}``): parsing it out of the
    message would break with the wording and could pick up contact text."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        data: dict[str, object] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + "Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": message,
            "pid": record.process,
        }
        found = getattr(record, "instance_id", None)
        if found:
            data["instance_id"] = found
        if record.exc_info:
            data["error"] = self.formatException(record.exc_info).splitlines()[-1]
        return json.dumps(data)


def configure_logging(fmt: str, verbose: bool, log_file: Path | None) -> None:
    if fmt not in ("text", "json"):
        raise InvalidInput(f"--log-format must be text or json, not {fmt!r}")
    handler: logging.Handler = (
        logging.FileHandler(_private_log(log_file))
        if log_file
        else logging.StreamHandler(sys.stderr)
    )
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(
            logging.Formatter(
                "%(asctime)sZ %(levelname)s %(name)s: %(message)s", "%Y-%m-%dT%H:%M:%S"
            )
        )
    logging.Formatter.converter = time.gmtime
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


def _mask_secrets(record: logging.LogRecord) -> bool:
    """A URL with a password (a database, a webhook) may reach an error message."""
    from relay.core.secrets import mask_text

    message = record.getMessage()
    masked = mask_text(message)
    if masked != message:
        record.msg, record.args = masked, None
    return True


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
