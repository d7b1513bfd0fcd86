"""``relay init`` and ``relay config show``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from relay.cli import render
from relay.cli.session import JsonOption, state
from relay.core.errors import InvalidInput
from relay.core.secrets import mask_url, mask_value

config_app = typer.Typer(help="Inspect the effective configuration.", no_args_is_help=True)


def init(
    directory: Annotated[
        Path, typer.Argument(help="Where to write relay.toml (default: here).")
    ] = Path("."),
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite an existing relay.toml.")
    ] = False,
) -> None:
    """Write a commented relay.toml and create its database."""
    from relay.api import create_database
    from relay.config import CONFIG_NAME, TEMPLATE, load_config

    target = directory / CONFIG_NAME
    if target.exists() and not force:
        raise InvalidInput(f"{target} exists; use --force to overwrite it")
    directory.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".toml.tmp")
    tmp.write_text(TEMPLATE, encoding="utf-8")
    tmp.replace(target)
    config = load_config(target, overrides=state.overrides)
    create_database(config)
    render.line(f"wrote {target}")
    render.line(f"database: {mask_url(config.database_url)}")


def show(json_out: JsonOption = False) -> None:
    """Print every setting with the layer it came from (default, file, env, flag)."""
    config = state.config()
    shown = {k: mask_value(k, v) for k, v in sorted(config.values.items())}
    database = mask_url(config.database_url)
    if json_out:
        render.emit_json(
            {
                "config_file": str(config.path) if config.path else None,
                "database_url": database,
                "values": {
                    k: {"value": v, "source": config.sources.get(k, "?")} for k, v in shown.items()
                },
            }
        )
        return
    render.line(f"config file: {config.path or '(none; built-in defaults)'}")
    render.line(f"database: {database}")
    render.table(
        "configuration",
        ["key", "value", "source"],
        (
            [k, repr(v) if isinstance(v, str) else v, config.sources.get(k, "?")]
            for k, v in shown.items()
        ),
    )


def register(app: typer.Typer) -> None:
    app.command()(init)
    config_app.command("show")(show)
    app.add_typer(config_app, name="config")
