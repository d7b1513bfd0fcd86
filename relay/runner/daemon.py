"""The long-running daemon: APScheduler drives, the store decides.

The jobs run on a ``BlockingScheduler`` (job functions by reference, the
default in-memory job store, nothing pickled):

* ``pulse`` (every ``daemon.pulse``, default 1 s): snoozes, heartbeats, turns,
  outbox. After each run it looks up the earliest due time in the store and,
  if that is sooner than the next scheduled run, brings the pulse forward (to
  at once, when more work is already due than one pulse takes), so a
  heartbeat fires within about a second of its due time whatever the
  interval. This happens in a listener for the job's completion rather than
  in the job itself: APScheduler counts a job as running until its function
  has returned, so a run brought forward from inside it would be skipped
  under ``max_instances=1``.
* ``poll`` (every ``daemon.poll``, default 30 s): asks channels for inbound.
* ``maintenance`` (cron, daily 03:15 UTC): retention.
* ``summary`` (every minute): one log line of what the daemon did in that
  minute (turns, deliveries, heartbeats, inbound), only if it did something.
* ``checkpoint`` (SQLite only, every second): copies the write-ahead log into
  the database file on a thread of its own, so the pulse's commits never do
  (:mod:`relay.store.checkpoints`).

``coalesce=True`` and ``max_instances=1`` on every job: a pulse that overruns
its interval is never run twice at once, and runs missed while the process
was stopped or busy collapse into one (the store already knows everything
that became due, so one pulse catches up). ``misfire_grace_time=None`` lets a
late run always happen rather than be skipped.

APScheduler's own job store holds no state the store does not have: stop the
daemon for a day and every overdue heartbeat fires once on restart, because
what is due is a column, not a scheduled job.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import signal
import socket
import sqlite3
import threading
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import FrameType
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import SQLAlchemyError

from relay.engine.verbs import doctor
from relay.runner import logs, retention
from relay.runner.pulse import Pulse, PulseReport
from relay.runner.summary import MinuteSummary
from relay.store import checkpoints, claims, daemons
from relay.store.models import Daemon

if TYPE_CHECKING:
    from apscheduler.executors.pool import ThreadPoolExecutor
    from apscheduler.schedulers.blocking import BlockingScheduler

    from relay.engine.runtime import Runtime

log = logging.getLogger("relay.daemon")

#: Seconds between the checkpoints of an SQLite store's write-ahead log.
CHECKPOINT_EVERY = 1.0


def daemon_identity() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


@dataclass
class DaemonRunner:
    relay: Runtime
    ident: str = field(default_factory=daemon_identity)
    stopping: threading.Event = field(default_factory=threading.Event)
    scheduler: BlockingScheduler | None = None
    _signals: int = 0
    _signals_installed: bool = False
    _last_pulse_idle: bool = True
    _pulse_failed: bool = False
    summary: MinuteSummary = field(default_factory=MinuteSummary)
    checkpointer: checkpoints.Checkpointer | None = None

    def __post_init__(self) -> None:
        config = self.relay.config
        self.pulse_every = config.settings.daemon.pulse
        self.poll_every = config.settings.daemon.poll
        self.pulse = Pulse(self.relay, owner=self.ident)

    # -- lifecycle -------------------------------------------------------------

    def register(self) -> None:
        now = self.relay.now()
        with self.relay.store.transaction() as session:
            session.add(
                Daemon(
                    id=self.ident,
                    host=socket.gethostname(),
                    pid=os.getpid(),
                    started_at=now,
                    last_pulse_at=now,
                )
            )
        log.info(
            "daemon %s started (pulse %ss, poll %ss)",
            self.ident,
            self.pulse_every.total_seconds(),
            self.poll_every.total_seconds(),
        )
        self.reclaim()

    def reclaim(self) -> None:
        """Take back at once the turns and deliveries that dead daemons had claimed,
        instead of waiting out their leases (5 minutes for a turn).

        Dead means: on SQLite, every other daemon (only one can hold the file's
        daemon lock, and we do); elsewhere, a daemon on this host whose process is
        gone, or one that recorded its stop.
        """
        from relay.runner.process import pid_alive

        alone = self.relay.store.engine.dialect.name == "sqlite"
        host = socket.gethostname()
        with self.relay.store.transaction() as session:
            rows = daemons.daemon_processes(session)
            dead = [
                ident
                for ident, on, pid, stopped in rows
                if ident != self.ident
                and (alone or stopped is not None or (on == host and not pid_alive(pid)))
            ]
            turns, messages = claims.release_claims_of(session, dead, self.relay.now())
        if turns or messages:
            log.warning(
                "took back %s turn(s) and %s delivery(ies) claimed by daemons that died",
                turns,
                messages,
            )

    def unregister(self) -> None:
        try:
            with self.relay.store.transaction() as session:
                daemons.record_stop(session, self.ident, self.relay.now())
        except SQLAlchemyError as exc:
            log.error("could not record the daemon's stop: %s", exc)
        log.info("daemon %s stopped", self.ident)

    def run(self) -> None:
        """Run in the foreground until SIGTERM/SIGINT (or :meth:`stop`); returns after a
        graceful stop: the job in progress (a turn, a delivery) finishes and commits."""
        from apscheduler.events import EVENT_JOB_EXECUTED, EVENT_SCHEDULER_STARTED

        scheduler, executor = self.schedule()
        scheduler.add_listener(self._after_job, EVENT_JOB_EXECUTED)
        scheduler.add_listener(self._on_started, EVENT_SCHEDULER_STARTED)
        self.install_signals()
        _settle_garbage_collector()
        stopper = threading.Thread(target=self._stop_when_asked, name="relay-stop", daemon=True)
        stopper.start()
        self.register()
        try:
            scheduler.start()  # returns once the scheduler is shut down
            executor.shutdown(wait=True)  # the job in progress finishes and commits
        finally:
            self.stopping.set()
            self.unregister()
            if self.checkpointer is not None:
                self.checkpointer.close()

    def schedule(self) -> tuple[BlockingScheduler, ThreadPoolExecutor]:
        """The scheduler with the daemon's jobs, not started yet. On an SQLite file it
        also takes the store's checkpoints over (:func:`checkpoints.take_over`), so
        call it once per daemon."""
        from apscheduler.executors.pool import ThreadPoolExecutor
        from apscheduler.schedulers.blocking import BlockingScheduler

        executor = ThreadPoolExecutor(max_workers=4)
        scheduler = self.scheduler = BlockingScheduler(
            timezone="UTC", executors={"default": executor}
        )
        options: dict[str, Any] = {"coalesce": True, "max_instances": 1, "misfire_grace_time": None}
        first = {"next_run_time": _utcnow(), **options}
        pulse = max(0.05, self.pulse_every.total_seconds())
        poll = max(1.0, self.poll_every.total_seconds())
        scheduler.add_job(self.pulse_job, "interval", seconds=pulse, id="pulse", **first)
        scheduler.add_job(self.poll_job, "interval", seconds=poll, id="poll", **first)
        scheduler.add_job(
            self.maintenance_job, "cron", hour=3, minute=15, id="maintenance", **options
        )
        scheduler.add_job(self.summary_job, "interval", seconds=60, id="summary", **options)
        self.checkpointer = checkpoints.take_over(self.relay.store.engine)
        if self.checkpointer is not None:
            scheduler.add_job(
                self.checkpoint_job,
                "interval",
                seconds=CHECKPOINT_EVERY,
                id="checkpoint",
                **options,
            )
        return scheduler, executor

    def stop(self) -> None:
        """Ask for a graceful stop (what SIGTERM does); safe from any thread."""
        self.stopping.set()

    def install_signals(self) -> None:
        """Take over SIGTERM/SIGINT (before the PID file is written, so a stop that
        comes at once is graceful too)."""
        if self._signals_installed:
            return
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        self._signals_installed = True

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        """Only flags the stop: the handler interrupts the main thread anywhere, even
        inside the scheduler holding its locks, so the shutdown itself happens on the
        ``relay-stop`` thread (and the main thread then waits for the job in progress)."""
        self._signals += 1
        if self._signals > 1:
            log.warning("second signal: exiting at once")
            os._exit(128 + signum)
        log.info(
            "signal %s: finishing the work in progress, then stopping", signal.Signals(signum).name
        )
        self.stopping.set()

    def _stop_when_asked(self) -> None:
        self.stopping.wait()
        self._shutdown()

    def _on_started(self, _event: Any) -> None:
        # A stop asked for before the scheduler ran could not shut it down.
        if self.stopping.is_set():
            self._shutdown()

    def _shutdown(self) -> None:
        from apscheduler.schedulers.base import STATE_STOPPED, SchedulerNotRunningError

        if self.scheduler is None or self.scheduler.state == STATE_STOPPED:
            return
        with contextlib.suppress(SchedulerNotRunningError):  # stopped by the other path
            self.scheduler.shutdown(wait=False)

    # -- jobs ------------------------------------------------------------------

    def pulse_job(self) -> None:
        if self.stopping.is_set():
            return
        self._last_pulse_idle = True
        try:
            if self._pulse_failed:
                self._take_back_own()
            with logs.held():
                report = self.pulse.run(should_stop=self.stopping.is_set)
            self._heartbeat_self()
        except Exception as exc:  # one bad pulse must not stop the daemon
            self._pulse_failed = True
            log.error("pulse failed: %s", _one_line(exc), exc_info=log.isEnabledFor(logging.DEBUG))
            return
        self._pulse_failed = False
        self._last_pulse_idle = report.idle
        self.summary.add(report)
        if not report.idle:
            log.debug("pulse: %s", report.to_json())

    def _take_back_own(self) -> None:
        """After a failed pulse (the database went away mid-turn or mid-delivery), the
        claims it left under this daemon's name are stale: no pulse runs beside this
        one (``max_instances=1``), so none is in progress. Without this they would
        hold their work until their leases ran out (5 minutes for a turn)."""
        with self.relay.store.transaction() as session:
            turns, messages = claims.release_claims_of(session, [self.ident], self.relay.now())
        if turns or messages:
            log.warning(
                "took back %s turn(s) and %s delivery(ies) left by a failed pulse", turns, messages
            )

    def _after_job(self, event: Any) -> None:
        if event.job_id != "pulse":
            return
        try:
            self._bring_forward()
        except Exception as exc:  # the next pulse runs on its schedule anyway
            log.error("looking for the next due work failed: %s", _one_line(exc))

    def poll_job(self) -> None:
        if self.stopping.is_set():
            return
        try:
            received = self.pulse.poll(PulseReport())
            self.summary.add(inbound=received)
            if received:
                log.info("polled %s inbound message(s)", received)
            # A queue left waiting behind nobody (a bug, a hand edit) is healed here.
            doctor.repair(self.relay, actor="daemon")
        except Exception as exc:  # logged; the daemon carries on
            log.error("poll failed: %s", _one_line(exc))

    def summary_job(self) -> None:
        line = self.summary.take()
        if line:
            log.info(line)

    def maintenance_job(self) -> None:
        if self.stopping.is_set():
            return
        try:
            result = retention.prune(self.relay)
            log.info("maintenance: %s", result)
        except Exception as exc:  # logged; the daemon carries on
            log.error("maintenance failed: %s", _one_line(exc))

    def checkpoint_job(self) -> None:
        assert self.checkpointer is not None
        try:
            self.checkpointer.run()
        except sqlite3.Error as exc:  # the writers' backstop checkpoints meanwhile
            log.error("checkpoint failed: %s", _one_line(exc))

    def _heartbeat_self(self) -> None:
        with self.relay.store.transaction() as session:
            daemons.record_pulse(session, self.ident, self.relay.now())

    def _bring_forward(self) -> None:
        """Run the next pulse at the earliest due time if that is before its schedule.

        Work already due after a pulse that did something (more than one batch,
        or work that fell due meanwhile) gets a pulse at once; after an idle
        pulse it waits for the schedule, so work another daemon holds locked
        never makes this one spin.
        """
        if self.scheduler is None or self.stopping.is_set():
            return
        with self.relay.store.transaction() as session:
            due = claims.next_due(session, self.relay.now())
        job = self.scheduler.get_job("pulse")
        if due is None or job is None or job.next_run_time is None:
            return
        now = _utcnow()
        if due <= now and self._last_pulse_idle:
            return
        if due < job.next_run_time:
            job.modify(next_run_time=max(due, now))


def _settle_garbage_collector() -> None:
    """Keep the cyclic collector off the hot path of a long-running process.

    A pulse makes and drops thousands of short-lived objects (ORM rows, dicts); with
    the default thresholds the collector runs every 700 allocations and walks every
    module, class and compiled query loaded at start-up each time it reaches the
    oldest generation. Frozen, those are never walked again, and a larger first
    threshold lets a batch finish before a collection (profiled: about a tenth of a
    pulse's time went to the collector). Cycles are still collected.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)


def _one_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def _utcnow() -> datetime:
    return datetime.now(UTC)
