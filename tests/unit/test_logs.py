"""The daemon's JSON log: the instance id is a field the logging code sets."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relay.runner.logs import JsonFormatter, configure_logging, held


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


def _as_json_dumps_writes_it(record: logging.LogRecord, formatter: JsonFormatter) -> str:
    """The line as the formatter wrote it before it was written out by hand."""
    data: dict[str, object] = {
        "time": formatter.formatTime(record, "%Y-%m-%dT%H:%M:%S") + "Z",
        "level": record.levelname.lower(),
        "logger": record.name,
        "message": record.getMessage(),
        "pid": record.process,
    }
    if getattr(record, "instance_id", None):
        data["instance_id"] = record.instance_id
    if record.exc_info:
        data["error"] = formatter.formatException(record.exc_info).splitlines()[-1]
    return json.dumps(data)


@settings(max_examples=300, deadline=None)
@given(
    message=st.text(),
    name=st.text(min_size=1),
    instance_id=st.one_of(st.none(), st.text()),
    level=st.sampled_from([logging.DEBUG, logging.INFO, logging.WARNING, 5]),
    pid=st.one_of(st.none(), st.integers(min_value=1, max_value=2**22)),
    created=st.floats(min_value=0, max_value=4e9),
    failed=st.booleans(),
)
def test_the_line_is_what_json_dumps_makes_of_the_same_fields(
    message: str,
    name: str,
    instance_id: str | None,
    level: int,
    pid: int | None,
    created: float,
    failed: bool,
) -> None:
    exc_info = None
    if failed:
        try:
            raise ValueError(message or "boom")
        except ValueError:
            exc_info = sys.exc_info()
    record = logging.LogRecord(name, level, __file__, 1, "%s", (message,), exc_info)
    record.process, record.created = pid, created
    if instance_id is not None:
        record.instance_id = instance_id
    formatter = JsonFormatter()
    assert formatter.format(record) == _as_json_dumps_writes_it(record, formatter)


def test_the_time_stamp_follows_the_second() -> None:
    """One ``strftime`` a second is shared by that second's lines, not the next's."""
    formatter = JsonFormatter()
    record = logging.LogRecord("relay", logging.INFO, __file__, 1, "x", None, None)
    stamps = []
    for created in (1_700_000_000.1, 1_700_000_000.9, 1_700_000_001.0, 1_699_999_999.5):
        record.created = created
        stamps.append(json.loads(formatter.format(record))["time"])
    assert stamps == [
        "2023-11-14T22:13:20Z",
        "2023-11-14T22:13:20Z",
        "2023-11-14T22:13:21Z",
        "2023-11-14T22:13:19Z",
    ]


def test_the_time_is_utc_whatever_the_process_time_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        record = logging.LogRecord("relay", logging.INFO, __file__, 1, "x", None, None)
        record.created = 1_700_000_000.0
        assert json.loads(JsonFormatter().format(record))["time"] == "2023-11-14T22:13:20Z"
    finally:
        monkeypatch.undo()
        time.tzset()


@pytest.fixture
def log_file(tmp_path: Path) -> Iterator[Path]:
    """relay's log configured into a file, and the loggers put back afterwards."""
    loggers = [logging.getLogger("relay"), logging.getLogger("apscheduler")]
    before = [(each.handlers[:], each.level, each.propagate) for each in loggers]
    path = tmp_path / "daemon.log"
    configure_logging("text", False, path)
    yield path
    loggers[0].handlers[0].close()
    for each, (handlers, level, propagate) in zip(loggers, before, strict=True):
        each.handlers[:], each.propagate = handlers, propagate
        each.setLevel(level)


def _lines(path: Path) -> list[str]:
    return [line.split(": ", 1)[1] for line in path.read_text().splitlines()]


def test_a_log_file_is_flushed_line_by_line_outside_a_pulse(log_file: Path) -> None:
    logging.getLogger("relay.test").info("one")
    assert _lines(log_file) == ["one"]


def test_a_pulse_s_lines_reach_the_file_when_it_ends_and_warnings_at_once(
    log_file: Path,
) -> None:
    log = logging.getLogger("relay.test")
    with held():
        log.info("routine")
        assert _lines(log_file) == []
        log.warning("trouble")
        assert _lines(log_file) == ["routine", "trouble"]
        log.info("more")
        assert _lines(log_file) == ["routine", "trouble"]
    assert _lines(log_file) == ["routine", "trouble", "more"]


def test_a_failing_pulse_still_flushes_its_lines(log_file: Path) -> None:
    with pytest.raises(RuntimeError), held():
        logging.getLogger("relay.test").info("before the failure")
        raise RuntimeError("pulse failed")
    assert _lines(log_file) == ["before the failure"]


@pytest.fixture(params=["text", "json"])
def relay_only_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """relay's log in a file and nowhere else, as in ``relay daemon``: records do
    not propagate to the root logger (see :func:`_alone` for pytest's handlers)."""
    loggers = [logging.getLogger("relay"), logging.getLogger("apscheduler")]
    before = [(each.handlers[:], each.level, each.propagate) for each in loggers]
    path = tmp_path / "daemon.log"
    configure_logging(request.param, True, path)
    loggers[0].propagate = False
    yield path
    loggers[0].handlers[0].close()
    for each, (handlers, level, propagate) in zip(loggers, before, strict=True):
        each.handlers[:], each.propagate = handlers, propagate
        each.setLevel(level)


def _alone() -> logging.Handler:
    """relay's handler, with the capturing handlers pytest adds to a logger that
    does not propagate taken off it for the rest of the test."""
    relay = logging.getLogger("relay")
    relay.handlers[:] = relay.handlers[:1]
    return relay.handlers[0]


def _without_time(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    if lines and lines[0].startswith("{"):
        return [json.dumps({**json.loads(line), "time": "T"}) for line in lines]
    return [line.split(" ", 1)[1] for line in lines]


def _commit_lines(lines: list[tuple[str, int, str, str | None]]) -> None:
    from sqlalchemy import create_engine
    from sqlalchemy.orm import Session

    from relay.store import commit_log

    with Session(create_engine("sqlite://")) as session, session.begin():
        for name, level, text, instance_id in lines:
            write = commit_log.info if level == logging.INFO else commit_log.debug
            write(session, logging.getLogger(name), "%s", text, instance_id=instance_id)


LINES = [
    ("relay.state", logging.INFO, "instance a1: WAITING -> SCHEDULED", "a1"),
    ("relay.state", logging.DEBUG, 'instance a1: reason: it\'s "quoted" é', "a1"),
    ("relay.outbox", logging.INFO, "message 7 to +34600000001 sent on console (a1)", "a1"),
    ("relay.outbox", logging.INFO, "a line about no conversation", None),
]


def test_a_transaction_s_lines_are_written_as_records_of_their_own_would_be(
    relay_only_log: Path,
) -> None:
    handler = _alone()
    records: list[logging.LogRecord] = []
    handler.addFilter(lambda record: records.append(record) or True)
    _commit_lines(LINES)
    handler.flush()
    assert len(records) == 1  # one record for the transaction's four lines
    together = _without_time(relay_only_log)
    relay_only_log.write_text("")
    for name, level, text, instance_id in LINES:
        extra = {"instance_id": instance_id} if instance_id else None
        logging.getLogger(name).log(level, "%s", text, extra=extra)
    handler.flush()
    assert len(together) == 4
    assert together == _without_time(relay_only_log)


def test_a_secret_in_a_transaction_s_line_is_masked(relay_only_log: Path) -> None:
    _alone()
    _commit_lines([("relay.state", logging.INFO, "via postgresql://u:hunter2@db/x", None)])
    logging.getLogger("relay").handlers[0].flush()
    text = relay_only_log.read_text()
    assert "hunter2" not in text
    assert "postgresql://u:***@db/x" in text


def test_lines_go_one_record_each_where_another_handler_would_see_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A handler relay did not set up (here pytest's) gets the records a direct call
    would give it, each with its instance id."""
    caplog.set_level(logging.DEBUG, logger="relay")
    _commit_lines(LINES)
    got = [
        (r.name, r.levelno, r.getMessage(), getattr(r, "instance_id", None)) for r in caplog.records
    ]
    assert got == LINES
