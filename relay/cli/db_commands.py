"""``relay db upgrade|downgrade|current``: the schema, through Alembic."""

from __future__ import annotations

from typing import Annotated

import typer

from relay.cli import render
from relay.cli.session import JsonOption, state
from relay.core.errors import InvalidInput

db_app = typer.Typer(help="Create and upgrade the database schema.", no_args_is_help=True)


@db_app.command()
def upgrade(
    revision: Annotated[str, typer.Argument(help="Target revision.")] = "head",
) -> None:
    """Upgrade the database schema (creating it if empty)."""
    from relay.api import upgrade_schema

    before, after = upgrade_schema(state.config(), revision)
    if before == after:
        render.line(f"database is at {after}; nothing to do")
    else:
        render.line(f"upgraded database from {before or 'empty'} to {after}")


@db_app.command()
def downgrade(
    revision: Annotated[str, typer.Argument(help="Target revision (base drops everything).")],
    yes: Annotated[bool, typer.Option("--yes", help="Confirm; downgrading can drop data.")] = False,
) -> None:
    """Downgrade the schema to REVISION. Destroys data the older schema has no room for."""
    from relay.api import downgrade_schema

    if not yes:
        raise InvalidInput("downgrading can drop data; pass --yes to confirm")
    after = downgrade_schema(state.config(), revision)
    render.line(f"database is at {after or 'base (empty)'}")


@db_app.command()
def current(json_out: JsonOption = False) -> None:
    """Print the schema revision of the database and the one this relay needs."""
    from relay.api import schema_revision

    found = schema_revision(state.config())
    if json_out:
        render.emit_json(
            {"current": found.current, "head": found.head, "up_to_date": found.up_to_date}
        )
        return
    note = "up to date" if found.up_to_date else "run `relay db upgrade`"
    if found.newer:
        note = "newer than this relay; upgrade relay"
    render.line(f"current: {found.current or 'none'}  head: {found.head}  ({note})")


def register(app: typer.Typer) -> None:
    app.add_typer(db_app, name="db")
