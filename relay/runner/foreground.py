"""The long-running processes run in this process until SIGTERM/SIGINT: ``relay
daemon`` in the foreground (the PID file and, on SQLite, the database's daemon lock
held around one :class:`relay.runner.daemon.DaemonRunner`), and ``relay serve``
(:mod:`relay.runner.serve`'s app on uvicorn).

Apart from :mod:`relay.runner.process` (the PID file, the lock, spawning), which the
daemon itself uses: the lifecycle imports the daemon, never the reverse.
"""

from __future__ import annotations

import logging
import signal
from typing import TYPE_CHECKING, Any

from relay.runner.daemon import DaemonRunner
from relay.runner.process import PID_NAME, PidFile, SingleDaemonLock, sqlite_path

if TYPE_CHECKING:
    from relay.engine.runtime import Runtime

log = logging.getLogger("relay.serve")


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


def serve(relay: Runtime, host: str, port: int, *, max_body: int | None = None) -> None:
    """``relay serve``: run the app until SIGINT/SIGTERM (uvicorn finishes the
    requests in flight)."""
    import uvicorn

    # Imported here: Starlette and the app only for relay serve, never the daemon.
    from relay.runner.serve import MAX_BODY, build_app

    check_bind(relay, host)
    config = server_config(build_app(relay, max_body=max_body or MAX_BODY), host, port)
    # uvicorn re-raises the signal that stopped it once it has shut down, to the
    # handler that was there before; a no-op one makes a requested stop exit 0.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: None)
    log.info("relay serve listening on http://%s:%s", host, port)
    uvicorn.Server(config).run()
    log.info("relay serve stopped")


def server_config(app: Any, host: str, port: int) -> Any:
    """uvicorn's settings for ``relay serve`` (``bench/serve_inbound.py`` runs its
    bare reference app on the same)."""
    import uvicorn

    return uvicorn.Config(
        app, host=host, port=port, log_level="warning", access_log=False, lifespan="off"
    )


def check_bind(relay: Runtime, host: str) -> None:
    """The console listens on loopback only unless ``[console] allow_remote``: put
    it behind a TLS reverse proxy instead (docs/operations.md)."""
    import ipaddress

    console = relay.config.settings.console
    if not console.enabled or console.allow_remote:
        return
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        from relay.core.errors import ConfigError

        raise ConfigError(
            f"relay serve --host {host}: the console listens on loopback only; put it "
            "behind a TLS reverse proxy, or set allow_remote = true in [console]"
        )
