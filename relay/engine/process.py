"""The daemon as an operating-system process: PID file, single-daemon lock, stop.

On SQLite only one daemon may work a database file: a second one would just
queue on the file lock. An exclusive ``flock`` on ``<db>.daemon.lock`` held
for the daemon's life enforces it, and the kernel releases it when the
process dies, so a crash never leaves a stale lock. The PID file under
``.relay/`` is for ``relay daemon stop|status``; a PID file whose process is
gone (or is not relay) is stale and is replaced.
"""

from __future__ import annotations

import fcntl
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from relay.core.errors import RelayError

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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+")  # noqa: SIM115 - held for the daemon's life
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


def is_relay_process(pid: int) -> bool:
    """Whether ``pid`` is alive and (where /proc tells) a relay process."""
    if not pid_alive(pid):
        return False
    cmdline = Path(f"/proc/{pid}/cmdline")
    if cmdline.exists():
        try:
            return b"relay" in cmdline.read_bytes()
        except OSError:
            return False
    return True


def running_pid(path: Path) -> int | None:
    """The PID in ``path`` if that daemon is running; a stale file is removed."""
    pid = read_pid(path)
    if pid is None:
        return None
    if is_relay_process(pid):
        return pid
    path.unlink(missing_ok=True)
    return None


def write_pid(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(str(os.getpid()))
    tmp.replace(path)


def remove_pid(path: Path) -> None:
    if read_pid(path) == os.getpid():
        path.unlink(missing_ok=True)


def stop(path: Path, timeout: float = 30.0) -> int | None:
    """SIGTERM the daemon in ``path`` and wait for it to exit; returns its pid."""
    pid = running_pid(path)
    if pid is None:
        return None
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not is_relay_process(pid):
            path.unlink(missing_ok=True)
            return pid
        time.sleep(0.1)
    raise RelayError(f"daemon {pid} did not stop within {int(timeout)}s")
