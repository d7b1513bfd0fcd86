"""The daemon's log: the instance id is a field the logging code sets; lines are
written on a thread of their own, masked, and none is lost at the stop."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from relay.runner.logs import JsonFormatter, configure_logging, stop_background_logging


def _line(message: str, *args: object, **extra: object) -> dict[str, object]:
    record = logging.LogRecord("relay.state", logging.INFO, __file__, 1, message, args, None)
    record.__dict__.update(extra)
    return json.loads(JsonFormatter().format(record))


def test_the_instance_id_is_the_field_the_call_site_set() -> None:
    line = _line("instance %s: sent", "r7k2ab", instance_id="r7k2ab")
    assert line["instance_id"] == "r7k2ab"
    assert line["message"] == "instance r7k2ab: sent"


def test_an_id_in_the_text_alone_is_not_taken_for_one() -> None:
    """Contact text can look like anything; only the call site says which instance."""
    assert "instance_id" not in _line("instance r7k2ab: the contact wrote 'instance x1'")


@pytest.fixture
def restored_loggers() -> Iterator[None]:
    """configure_logging takes over the relay and apscheduler loggers: give them back."""
    saved = {
        name: (logger.handlers[:], logger.level, logger.propagate)
        for name in ("relay", "apscheduler")
        for logger in [logging.getLogger(name)]
    }
    yield
    stop_background_logging()
    for name, (handlers, level, propagate) in saved.items():
        logger = logging.getLogger(name)
        logger.handlers[:], logger.level, logger.propagate = handlers, level, propagate


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_daemon_writes_its_lines_on_a_thread_of_its_own(
    tmp_path: Path, restored_loggers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    writers: set[str] = set()
    format_line = JsonFormatter.format

    def noting_the_thread(self: JsonFormatter, record: logging.LogRecord) -> str:
        writers.add(threading.current_thread().name)
        return format_line(self, record)

    monkeypatch.setattr(JsonFormatter, "format", noting_the_thread)
    path = tmp_path / "daemon.log"
    configure_logging("json", False, path, background=True)
    log = logging.getLogger("relay.daemon")
    todos = ["ask"]
    log.info("instance %s: todos %s", "r7k2ab", todos, extra={"instance_id": "r7k2ab"})
    todos.append("changed after the call")
    log.info("database postgresql://relay:hunter2@db/relay is gone")
    log.debug("not at INFO")
    stop_background_logging()

    lines = _lines(path)
    assert [line["message"] for line in lines] == [
        "instance r7k2ab: todos ['ask']",
        "database postgresql://relay:***@db/relay is gone",
    ]
    assert lines[0]["instance_id"] == "r7k2ab"
    assert threading.current_thread().name not in writers and len(writers) == 1

    # Once stopped, lines are written as they come, on the caller's thread.
    log.warning("after the stop")
    assert _lines(path)[-1]["message"] == "after the stop"
    assert threading.current_thread().name in writers


def test_reconfiguring_ends_the_previous_writer(tmp_path: Path, restored_loggers: None) -> None:
    first, second = tmp_path / "first.log", tmp_path / "second.log"
    threads = threading.active_count()
    configure_logging("text", False, first, background=True)
    logging.getLogger("relay.daemon").info("one")
    configure_logging("text", False, second, background=True)
    logging.getLogger("relay.daemon").info("two")
    stop_background_logging()
    assert first.read_text().rstrip().endswith("relay.daemon: one")
    assert second.read_text().rstrip().endswith("relay.daemon: two")
    assert threading.active_count() == threads
