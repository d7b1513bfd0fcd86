"""The daemon as an operating-system process: PID file, single-daemon lock, stop.

On SQLite only one daemon may work a database file: a second one would just
queue on the file lock. An exclusive ``flock`` on ``<db>.daemon.lock`` held
for the daemon's life enforces it, and the kernel releases it when the
process dies, so a crash never leaves a stale lock.

The PID file under ``.relay/`` (for ``relay daemon stop|status``) is proved
the same way: the live daemon holds an exclusive ``flock`` on the PID file
itself. A PID is believed only while that lock is held; if another process
can take it, nobody holds it and the file is stale, whatever process now
has that number. Nothing is decided by a process's name or command line.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from relay.core.errors import RelayError

if TYPE_CHECKING:
    pass

PID_NAME = "daemon.pid"
LOG_NAME = "daemon.log"


class DaemonRunning(RelayError):
    """A relay daemon is already running."""


def sqlite_path(url: str) -> Path | None:
    if not url.startswith("sqlite") or ":///" not in url:
        return None
    raw = url.split(":///", 1)[1]
    return None if raw in ("", ":memory:") else Path(raw)


@dataclass
class SingleDaemonLock:
    path: Path
    _handle: IO[str] | None = None

    def acquire(self) -> None:
        private_dir(self.path.parent)
        handle = private_open(self.path)
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise DaemonRunning(
                f"another relay daemon (pid {holder}) is already working this SQLite database; "
                "one daemon per SQLite file (use PostgreSQL for several)"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._handle = handle

    def release(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) owner-only: it holds the database, logs and PIDs."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def private_open(path: Path) -> IO[str]:
    """Open (creating owner-only, 0o600, whatever the umask) for reading and appending."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    return os.fdopen(fd, "a+")


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (signal 0 checks without signalling)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _lock_held(path: Path, *, remove_stale: bool) -> bool:
    """Whether a live daemon holds the PID file's lock.

    A non-blocking shared lock succeeds only when nobody holds the exclusive
    one; then the file is stale and (with ``remove_stale``) is removed while
    we hold the lock, so a daemon starting meanwhile cannot lose its file
    (:class:`PidFile` re-checks the inode after locking).
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return True
    try:
        if remove_stale and _same_file(fd, path):
            path.unlink(missing_ok=True)
    finally:
        os.close(fd)  # closing releases the lock
    return False


def _same_file(fd: int, path: Path) -> bool:
    try:
        here, there = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def running_pid(path: Path) -> int | None:
    """The PID in ``path`` if the daemon that wrote it still holds its lock.

    A stale file (its daemon died, whatever now runs under that number) is removed.
    """
    if not _lock_held(path, remove_stale=True):
        return None
    return read_pid(path)


@dataclass
class PidFile:
    """The daemon's PID file, locked for the daemon's life (the proof it is running)."""

    path: Path
    _handle: IO[str] | None = None

    def acquire(self) -> None:
        private_dir(self.path.parent)
        while True:
            handle = private_open(self.path)
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                holder = read_pid(self.path)
                raise DaemonRunning(
                    f"a relay daemon started here is already running (pid {holder or '?'})"
                ) from None
            if _same_file(handle.fileno(), self.path):
                break
            handle.close()  # a status removed the stale file between open and lock
        handle.truncate(0)
        handle.write(str(os.getpid()))
        handle.flush()
        self._handle = handle

    def release(self) -> None:
        """Remove the file while still holding its lock, then let the lock go."""
        if self._handle is None:
            return
        if _same_file(self._handle.fileno(), self.path):
            self.path.unlink(missing_ok=True)
        self._handle.close()
        self._handle = None


def stop(path: Path, timeout: float = 30.0) -> int | None:
    """SIGTERM the daemon in ``path`` and wait for it to let its lock go; returns its pid.

    The signal goes only to a PID whose PID file is locked: a stale file naming
    an unrelated process is removed, and that process is left alone.
    """
    pid = running_pid(path)
    if pid is None:
        return None
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _lock_held(path, remove_stale=True):
            return pid
        time.sleep(0.1)
    raise RelayError(f"daemon {pid} did not stop within {int(timeout)}s")


def spawn_daemon(cli_args: list[str], pid_path: Path, log_path: Path) -> int:
    """Start ``relay CLI_ARGS`` (a detached daemon) in a new session and wait until
    it has taken its PID file; returns its pid. Refused while one runs here."""
    other = running_pid(pid_path)
    if other is not None:
        raise DaemonRunning(f"a relay daemon is already running here (pid {other})")
    private_dir(log_path.parent)
    child = subprocess.Popen(  # our own interpreter and module
        [sys.executable, "-m", "relay", *cli_args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        cwd=os.getcwd(),
    )
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if read_pid(pid_path) == child.pid:
            return child.pid
        if child.poll() is not None:
            err = (child.stderr.read().decode(errors="replace") if child.stderr else "").strip()
            raise RelayError(err.splitlines()[-1] if err else "the daemon exited at once")
        time.sleep(0.05)
    raise RelayError(f"the daemon did not report ready within 15s; see {log_path}")
