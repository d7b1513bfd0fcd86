"""``relay daemon`` (foreground or --detach), ``relay daemon stop``, ``relay daemon status``."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from relay.cli import render
from relay.cli.main import JsonOption, state
from relay.core.errors import InvalidInput, RelayError

if TYPE_CHECKING:
    from relay.engine.service import Relay

daemon_app = typer.Typer(
    help="Run the heartbeat daemon (APScheduler): follow-ups, turns, deliveries, polling.",
    invoke_without_command=True,
)


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


def setup_logging(fmt: str, verbose: bool, log_file: Path | None) -> None:
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
    from relay.engine.process import private_dir, private_open

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


def _pid_path() -> Path:
    from relay.engine.process import PID_NAME

    return state.config().data_dir / PID_NAME


@daemon_app.callback()
def daemon(
    ctx: typer.Context,
    detach: Annotated[
        bool, typer.Option("--detach", help="Run in the background; PID file in .relay/.")
    ] = False,
    log_format: Annotated[str, typer.Option("--log-format", help="text or json.")] = "text",
    log_file: Annotated[
        Path | None, typer.Option("--log-file", help="Write the log here instead of stderr.")
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
    detached: Annotated[bool, typer.Option("--detached-child", hidden=True)] = False,
) -> None:
    """Run the daemon in the foreground (SIGTERM/SIGINT stop it gracefully).

    Subcommands `stop` and `status` manage a daemon started with --detach.
    """
    if ctx.invoked_subcommand is not None:
        return
    if detach:
        _detach(log_format, log_file, verbose)
        return
    if detached:
        # No terminal to echo to: echoing into a closed pipe would fail every delivery.
        state.set_override("channels.console.echo", False)
    _run_foreground(log_format, log_file, verbose)


def _run_foreground(log_format: str, log_file: Path | None, verbose: bool) -> None:
    from relay.engine import process

    setup_logging(log_format, verbose, log_file)
    pid_file = process.PidFile(_pid_path())
    pid_file.acquire()
    try:
        _run_locked(state.relay())
    finally:
        pid_file.release()


def _run_locked(relay: Relay) -> None:
    from relay.engine import process
    from relay.engine.daemon import DaemonRunner

    lock = None
    db_file = process.sqlite_path(relay.config.database_url)
    if db_file is not None:
        lock = process.SingleDaemonLock(db_file.with_name(db_file.name + ".daemon.lock"))
        lock.acquire()
    runner = DaemonRunner(relay)
    runner.install_signals()
    try:
        runner.run()
    finally:
        if lock is not None:
            lock.release()


def _detach(log_format: str, log_file: Path | None, verbose: bool) -> None:
    from relay.engine import process

    config = state.config()
    pid_path = _pid_path()
    other = process.running_pid(pid_path)
    if other is not None:
        raise process.DaemonRunning(f"a relay daemon is already running here (pid {other})")
    log_path = log_file or config.data_dir / process.LOG_NAME
    process.private_dir(log_path.parent)
    args = [sys.executable, "-m", "relay"]
    if state.config_path:
        args += ["--config", str(Path(state.config_path).resolve())]
    if state.overrides.get("database.url"):
        args += ["--database", str(state.overrides["database.url"])]
    args += ["daemon", "--detached-child", "--log-format", log_format]
    args += ["--log-file", str(log_path.resolve())]
    if verbose:
        args.append("--verbose")
    child = subprocess.Popen(  # our own interpreter and module
        args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        cwd=os.getcwd(),
    )
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if process.read_pid(pid_path) == child.pid:
            render.line(f"daemon started (pid {child.pid}); log: {log_path}")
            return
        if child.poll() is not None:
            err = (child.stderr.read().decode(errors="replace") if child.stderr else "").strip()
            raise RelayError(err.splitlines()[-1] if err else "the daemon exited at once")
        time.sleep(0.05)
    raise RelayError(f"the daemon did not report ready within 15s; see {log_path}")


@daemon_app.command()
def stop(
    timeout: Annotated[float, typer.Option(help="Seconds to wait for a graceful stop.")] = 30.0,
) -> None:
    """Stop the daemon started here with --detach (SIGTERM, then wait)."""
    from relay.engine import process

    pid = process.stop(_pid_path(), timeout)
    if pid is None:
        render.line("no daemon is running here")
    else:
        render.line(f"daemon {pid} stopped")


@daemon_app.command()
def status(json_out: JsonOption = False) -> None:
    """Say whether a daemon started here is running (exit 0 if it is, 3 if not)."""
    from relay.engine import process

    pid = process.running_pid(_pid_path())
    if json_out:
        render.emit_json({"running": pid is not None, "pid": pid})
    else:
        render.line(f"daemon running (pid {pid})" if pid else "no daemon is running here")
    if pid is None:
        raise typer.Exit(3)


def register(app: typer.Typer) -> None:
    app.add_typer(daemon_app, name="daemon")
