"""The daemon's WAL checkpoints: off the committing connections, on a thread."""

from __future__ import annotations

import logging
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import event, func, insert, select

from relay.store import checkpoints
from relay.store.checkpoints import BackgroundCheckpoints
from relay.store.database import Store, open_store
from relay.store.models import EventRow, table_of

AT = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
# Events with a body this long fill about a page each.
PAGE = {"text": "x" * 3_500}


def _write(store: Store, count: int) -> None:
    with store.transaction() as session:
        session.execute(
            insert(table_of(EventRow)),
            [
                {"kind": "t", "instance_id": f"i{n}", "data": PAGE, "created_at": AT}
                for n in range(count)
            ],
        )


def _autocheckpoint(store: Store) -> int:
    connection = store.engine.raw_connection()
    try:
        return int(connection.cursor().execute("PRAGMA wal_autocheckpoint").fetchone()[0])
    finally:
        connection.close()


@pytest.fixture
def sqlite_url(tmp_path: Path, _sqlite_template: Path) -> str:
    """A SQLite file at the schema head (checkpoints concern SQLite only)."""
    target = tmp_path / "relay.db"
    shutil.copyfile(_sqlite_template, target)
    return f"sqlite:///{target}"


def test_only_a_sqlite_file_in_wal_mode_is_checkpointed(db_url: str) -> None:
    store = open_store(db_url)
    assert BackgroundCheckpoints.applies(store.engine) is (store.dialect == "sqlite")
    memory = Store(open_store("sqlite://", check=False).engine)
    assert checkpoints.started(memory.engine) is None


def test_committing_connections_leave_the_log_to_the_thread(sqlite_url: str) -> None:
    store = open_store(sqlite_url)
    assert _autocheckpoint(store) == 1000
    background = BackgroundCheckpoints(store.engine)
    background.start()
    try:
        assert _autocheckpoint(store) == 0
        _write(store, 50)
        with background.done:
            assert background.done.wait_for(lambda: background.count >= 1, timeout=30)
        # The log was copied into the database file: nothing is left to copy.
        busy, logged, copied = background.checkpoint() or (1, 0, -1)
        assert busy == 0 and copied == logged
    finally:
        background.stop()
    assert _autocheckpoint(store) == 1000


@pytest.mark.parametrize(("restart_above", "restarted"), [(10, True), (100_000, False)])
def test_a_long_log_is_started_over(sqlite_url: str, restart_above: int, restarted: bool) -> None:
    """A checkpoint that finds more than ``restart_above`` pages in the log asks
    for ``RESTART``, so that the next commit writes at the start of the log."""
    store = open_store(sqlite_url)
    said: list[str] = []
    event.listen(store.engine, "connect", lambda conn, _: conn.set_trace_callback(said.append))
    store.engine.dispose()
    background = BackgroundCheckpoints(store.engine, restart_above=restart_above)
    _write(store, 50)
    background.checkpoint()
    assert ("PRAGMA wal_checkpoint(RESTART)" in said) is restarted
    assert said.count("PRAGMA wal_checkpoint(PASSIVE)") == 1


def test_only_writes_wake_the_thread(sqlite_url: str) -> None:
    store = open_store(sqlite_url)
    background = BackgroundCheckpoints(store.engine)
    event.listen(store.engine, "commit", background._on_commit)  # the thread is not started
    with store.read_transaction() as session:
        session.execute(select(func.count()).select_from(table_of(EventRow)))
    assert not background._wrote.is_set()
    _write(store, 1)
    assert background._wrote.is_set()


def test_stop_checkpoints_what_is_left_and_ends_the_thread(sqlite_url: str) -> None:
    store = open_store(sqlite_url)
    background = BackgroundCheckpoints(store.engine)
    background.start()
    thread = background._thread
    _write(store, 20)
    background.stop()
    assert thread is not None and not thread.is_alive()
    assert background.count >= 1
    background.stop()  # stopping twice is harmless


def test_a_failed_checkpoint_is_logged_once_and_retried(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store(sqlite_url)
    background = BackgroundCheckpoints(store.engine)

    def broken() -> object:
        raise sqlite3.OperationalError("disk I/O error")

    with monkeypatch.context() as patched, caplog.at_level(logging.WARNING, "relay.store"):
        patched.setattr(store.engine, "raw_connection", broken)
        assert background.checkpoint() is None
        assert background.checkpoint() is None
    assert [r.getMessage() for r in caplog.records].count(
        "WAL checkpoint failed (retried after the next commit): disk I/O error"
    ) == 1
    assert background.checkpoint() is not None
