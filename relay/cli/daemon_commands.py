"""``relay daemon`` (foreground or --detach), ``relay daemon stop``, ``relay daemon status``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from relay.cli import render
from relay.cli.session import JsonOption, state

daemon_app = typer.Typer(
    help="Run the heartbeat daemon (APScheduler): follow-ups, turns, deliveries, polling.",
    invoke_without_command=True,
)


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
        from relay.api import channels_of_type

        for name in channels_of_type(state.config(), "console"):
            state.set_override(f"channels.{name}.echo", False)
    _run_foreground(log_format, log_file, verbose)


def _run_foreground(log_format: str, log_file: Path | None, verbose: bool) -> None:
    from relay.api import configure_logging

    configure_logging(log_format, verbose, log_file, owns_process=True)
    state.relay().run_daemon()


def _detach(log_format: str, log_file: Path | None, verbose: bool) -> None:
    from relay import api

    config = state.config()
    log_path = log_file or api.daemon_log_path(config)
    args = []
    if state.config_path:
        args += ["--config", str(Path(state.config_path).resolve())]
    if state.overrides.get("database.url"):
        args += ["--database", str(state.overrides["database.url"])]
    args += ["daemon", "--detached-child", "--log-format", log_format]
    args += ["--log-file", str(log_path.resolve())]
    if verbose:
        args.append("--verbose")
    pid = api.start_daemon(config, args, log_path)
    render.line(f"daemon started (pid {pid}); log: {log_path}")


@daemon_app.command()
def stop(
    timeout: Annotated[float, typer.Option(help="Seconds to wait for a graceful stop.")] = 30.0,
) -> None:
    """Stop the daemon started here with --detach (SIGTERM, then wait)."""
    from relay.api import stop_daemon

    pid = stop_daemon(state.config(), timeout)
    if pid is None:
        render.line("no daemon is running here")
    else:
        render.line(f"daemon {pid} stopped")


@daemon_app.command()
def status(json_out: JsonOption = False) -> None:
    """Say whether a daemon started here is running (exit 0 if it is, 3 if not)."""
    from relay.api import daemon_pid

    pid = daemon_pid(state.config())
    if json_out:
        render.emit_json({"running": pid is not None, "pid": pid})
    else:
        render.line(f"daemon running (pid {pid})" if pid else "no daemon is running here")
    if pid is None:
        raise typer.Exit(3)


def register(app: typer.Typer) -> None:
    app.add_typer(daemon_app, name="daemon")
