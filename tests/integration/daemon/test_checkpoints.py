"""A daemon on SQLite checkpoints the write-ahead log on a thread of its own, so
its pulse's commits never copy the log into the file (relay.store.checkpoints)."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable

import pytest
from backends import POSTGRES_ONLY, SQLITE_ONLY
from daemon_support import OBJECTIVE, PHONE, TODOS
from engine_relay import EngineRelay as Relay
from sqlalchemy import Engine

from relay.runner.daemon import DaemonRunner
from relay.store import checkpoints
from relay.store.database import make_engine


def _mark(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() or 0)


def _fill(engine: Engine, commits: int) -> None:
    """Commits of about three pages each (an 8 KB row overflows its page)."""
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE IF NOT EXISTS filler (body TEXT)")
    for _ in range(commits):
        with engine.begin() as conn:
            conn.exec_driver_sql("INSERT INTO filler VALUES (?)", ("x" * 8000,))


def _log_pages(path: str) -> int:
    return os.path.getsize(path + "-wal") // 4096


@SQLITE_ONLY
def test_taking_over_raises_the_writers_mark_and_the_checkpointer_copies_the_log(
    db_url: str,
) -> None:
    engine = make_engine(db_url)
    assert _mark(engine) == 1000  # SQLite's default, before
    checkpointer = checkpoints.take_over(engine)
    assert checkpointer is not None
    try:
        assert _mark(engine) == checkpoints.BACKSTOP_PAGES
        _fill(engine, 1000)
        # At the default mark a commit would have copied the log back every 1,000
        # pages and the log would have started over; nothing did.
        assert _log_pages(checkpointer.path) > 2000

        done = checkpointer.run()

        assert not done.busy
        assert done.log_frames > 2000
        assert done.checkpointed == done.log_frames
        _fill(engine, 1)  # the log starts over: every frame was in the file
        assert checkpointer.run().log_frames < 10
    finally:
        checkpointer.close()
        engine.dispose()


@SQLITE_ONLY
def test_a_checkpoint_neither_waits_for_a_writer_nor_holds_it_up(db_url: str) -> None:
    engine = make_engine(db_url)
    checkpointer = checkpoints.take_over(engine)
    assert checkpointer is not None
    try:
        _fill(engine, 10)
        with engine.begin() as conn:  # BEGIN IMMEDIATE: the write lock, held
            conn.exec_driver_sql("INSERT INTO filler VALUES ('in progress')")
            results: list[checkpoints.Checkpoint] = []
            worker = threading.Thread(target=lambda: results.append(checkpointer.run()))
            worker.start()
            worker.join(timeout=10)
            # Done while the write is open: everything committed is in the file.
            assert results and not results[0].busy
            assert results[0].checkpointed == results[0].log_frames > 0
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT count(*) FROM filler").scalar() == 11
    finally:
        checkpointer.close()
        engine.dispose()


def test_nothing_is_taken_over_from_an_in_memory_database() -> None:
    assert checkpoints.take_over(make_engine("sqlite://")) is None


@POSTGRES_ONLY
def test_nothing_is_taken_over_on_postgresql(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        assert checkpoints.take_over(engine) is None
    finally:
        engine.dispose()


@SQLITE_ONLY
def test_the_daemons_pulses_commit_at_the_backstop_and_a_failed_checkpoint_is_logged(
    make_relay_here: Callable[..., Relay],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    relay = make_relay_here()
    runner = DaemonRunner(relay)
    runner.schedule()
    assert runner.checkpointer is not None
    relay.start(PHONE, OBJECTIVE, list(TODOS))
    runner.pulse_job()
    assert _mark(relay.store.engine) == checkpoints.BACKSTOP_PAGES

    def fails(self: checkpoints.Checkpointer) -> checkpoints.Checkpoint:
        raise sqlite3.OperationalError("disk I/O error")

    with monkeypatch.context() as patch:
        patch.setattr(checkpoints.Checkpointer, "run", fails)
        runner.checkpoint_job()  # logged, not raised: the daemon carries on
    assert "checkpoint failed: OperationalError: disk I/O error" in caplog.text
    runner.checkpoint_job()  # the next one works again
    done = runner.checkpointer.run()
    assert not done.busy and done.checkpointed == done.log_frames
    runner.checkpointer.close()


def test_the_daemon_schedules_checkpoints_only_where_it_takes_them_over(
    make_relay_here: Callable[..., Relay], db_url: str
) -> None:
    runner = DaemonRunner(make_relay_here())
    scheduler, _ = runner.schedule()
    jobs = {job.id for job in scheduler.get_jobs()}
    assert {"pulse", "poll", "maintenance", "summary"} <= jobs
    assert ("checkpoint" in jobs) == db_url.startswith("sqlite")
    assert (runner.checkpointer is not None) == db_url.startswith("sqlite")
