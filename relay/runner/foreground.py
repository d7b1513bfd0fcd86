"""``relay daemon`` in the foreground: the PID file and, on SQLite, the database's
daemon lock held around one :class:`relay.runner.daemon.DaemonRunner`.

Apart from :mod:`relay.runner.process` (the PID file, the lock, spawning), which the
daemon itself uses: the lifecycle imports the daemon, never the reverse.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from relay.runner.daemon import DaemonRunner
from relay.runner.process import PID_NAME, PidFile, SingleDaemonLock, sqlite_path

if TYPE_CHECKING:
    from relay.engine.runtime import Runtime


def run_daemon(relay: Runtime) -> None:
    """Run the daemon in this process until SIGTERM/SIGINT, holding the PID file
    under the data directory and, on SQLite, the database's daemon lock."""
    pid_file = PidFile(relay.config.data_dir / PID_NAME)
    pid_file.acquire()
    try:
        _run_locked(relay)
    finally:
        pid_file.release()


def _run_locked(relay: Runtime) -> None:
    lock = None
    db_file = sqlite_path(relay.config.database_url)
    if db_file is not None:
        lock = SingleDaemonLock(db_file.with_name(db_file.name + ".daemon.lock"))
        lock.acquire()
    runner = DaemonRunner(relay)
    runner.install_signals()
    try:
        runner.run()
    finally:
        if lock is not None:
            lock.release()
