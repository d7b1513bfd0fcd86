"""The ``relay`` command: a Typer app over the Python API.

Exit codes: 0 success; 1 refused by the state machine; 2 usage, not found,
bad input or configuration error; 130 interrupted. Errors are one line on
stderr, never a traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from relay import __version__
from relay.cli import coercion, panels, placeholders, render, resume_collector
from relay.cli.session import state
from relay.core.errors import RelayError
from relay.core.refusals import message_of


def _flags_without_placeholder() -> None:
    """Typer shows ``<bool>`` after every flag in ``--help``; a flag takes no value,
    so show none (as click and gh do)."""
    from typer.core import TyperOption

    shown = TyperOption.display_type_rich

    def display(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag else shown(self, ctx)

    TyperOption.display_type_rich = display  # type: ignore[method-assign]


_flags_without_placeholder()


class RelayGroup(TyperGroup):
    """Turns every failure into one stderr line and a documented exit code.

    Doing it here (not only in the console script) means Typer's test runner
    sees exactly what a user sees.
    """

    def list_commands(self, ctx: Any) -> list[str]:
        return panels.ordered(super().list_commands(ctx))

    def invoke(self, ctx: Any) -> Any:
        # Everything relay writes (database, logs, console files, PID file) names
        # contacts or holds their words: owner-only, whatever the caller's umask.
        umask = os.umask(0o077)
        try:
            return super().invoke(ctx)
        except RelayError as exc:
            render.error(message_of(exc))
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            render.error("interrupted")
            ctx.exit(130)
        except BrokenPipeError:
            # The reader went away (`relay list | head`): stop quietly, as Unix tools do.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            ctx.exit(0)
        except Exception as exc:
            if _is_usage_error(exc):
                render.error(_usage(exc))
                ctx.exit(2)
            if _is_framework_exception(exc):
                raise  # exits: the framework ends the process
            render.error(_describe(exc))
            ctx.exit(2)
        finally:
            state.close()
            os.umask(umask)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """The root's own options (``relay --bogus``): a usage error is one line too."""
        try:
            return super().parse_args(ctx, args)
        except Exception as exc:
            if not _is_usage_error(exc):
                raise
            render.error(_usage(exc))
            ctx.exit(2)
            raise  # not reached: ctx.exit raises


def _is_usage_error(exc: BaseException) -> bool:
    """click's UsageError (a bad value, an unknown option or command), whichever
    click Typer uses; ``--help`` and exits are not errors."""
    return _is_framework_exception(exc) and any(
        kind.__name__ == "UsageError" for kind in type(exc).__mro__
    )


def _usage(exc: Any) -> str:
    """A usage error as the documented one line, with where to find help."""
    message = " ".join(str(exc.format_message()).split()).rstrip(".")
    message = message[:1].lower() + message[1:]
    where = getattr(getattr(exc, "ctx", None), "command_path", None) or "relay"
    return f"{message} (see '{where} -h')"


placeholders.install()
coercion.install()

app = typer.Typer(
    name="relay",
    cls=RelayGroup,
    help=(
        "Orchestrate outreach conversations: start one per contact with an objective and "
        "todos, let an agent conduct it over a channel, follow up with silent contacts, and "
        "record everything.\n\n"
        "Exit codes: 0 ok, 1 refused by the state machine, 2 usage/not found/bad input/config; "
        "`relay wait`: 3 needs a human, 4 timed out, 5 ended without the condition."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def version_callback(value: bool) -> None:
    if value:
        typer.echo(f"relay {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    config: Annotated[
        str | None,
        typer.Option(
            "--config",
            "-c",
            envvar="RELAY_CONFIG",
            help="Path to relay.toml (default: the nearest relay.toml here or in a folder above).",
        ),
    ] = None,
    database: Annotated[
        str | None,
        typer.Option(
            "--database",
            help="SQLAlchemy URL of the store; overrides database.url and RELAY_DATABASE_URL.",
        ),
    ] = None,
    actor: Annotated[
        str | None,
        typer.Option(
            "--actor",
            envvar="RELAY_ACTOR",
            help="Who runs this command, for the audit log (default: your OS user name).",
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=version_callback, is_eager=True, help="Show the version."
        ),
    ] = False,
) -> None:
    state.close()
    state.__init__(config_path=config, overrides={"database.url": database})  # type: ignore[misc]
    state.actor = actor


def register() -> None:
    """Attach the command modules; each is one command group."""
    from relay.cli import (
        campaign_commands,
        config_commands,
        contact_commands,
        daemon_commands,
        db_commands,
        draft_commands,
        engine_commands,
        inbox_commands,
        inspect_commands,
        instance_commands,
        program_commands,
        serve_commands,
        stats_commands,
        watch_commands,
    )

    for module in (
        instance_commands,
        program_commands,
        draft_commands,
        config_commands,
        db_commands,
        engine_commands,
        contact_commands,
        inbox_commands,
        campaign_commands,
        stats_commands,
        watch_commands,
        daemon_commands,
        serve_commands,
        inspect_commands,
    ):
        module.register(app)
    panels.apply(app)


register()
resume_collector()  # paused by relay.cli while the command loaded


def _is_framework_exception(exc: BaseException) -> bool:
    # Typer vendors click in some releases and depends on it in others; match
    # both by module rather than importing either.
    module = type(exc).__module__
    return module.startswith(("click", "typer"))


def _describe(exc: BaseException) -> str:
    from sqlalchemy.exc import SQLAlchemyError

    if isinstance(exc, SQLAlchemyError):
        from relay.core.refusals import database_line

        return database_line(exc)
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


#: The root options that take a value: the word after one is not a command.
_VALUED = frozenset({"--config", "-c", "--database", "--actor"})


def asked_for(args: list[str]) -> str | None:
    """The command a command line names, when that is plain from its first words;
    None for help, the version, completion or anything unusual."""
    index = 0
    while index < len(args):
        word = args[index]
        if word in _VALUED:
            index += 2
        elif word.partition("=")[0] in _VALUED:
            index += 1
        elif word.startswith("-"):
            return None
        else:
            return word
    return None


@contextmanager
def _only(name: str | None) -> Iterator[None]:
    """Register only the command run, for this run. Typer builds every command's
    parameters from its signature before parsing (about 30 ms for relay's 40);
    one command needs only its own. Anything else gets the whole tree."""
    commands, groups = app.registered_commands, app.registered_groups
    chosen = [c for c in commands if _name_of(c) == name]
    chosen_groups = [g for g in groups if g.name == name]
    if name is not None and (chosen or chosen_groups):
        app.registered_commands, app.registered_groups = chosen, chosen_groups
    try:
        yield
    finally:
        app.registered_commands, app.registered_groups = commands, groups


def _name_of(command: Any) -> str | None:
    if isinstance(command.name, str):
        return command.name
    callback = command.callback
    return callback.__name__.lower().replace("_", "-") if callback else None


def run(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    args = sys.argv[1:] if argv is None else argv
    completing = any(key.endswith("_COMPLETE") for key in os.environ)
    with _only(None if completing else asked_for(args)):
        app(args=args, prog_name="relay")
