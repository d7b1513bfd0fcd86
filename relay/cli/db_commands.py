"""``relay db upgrade|downgrade|current``: the schema, through Alembic."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from relay.cli import render
from relay.cli.main import JsonOption, state

if TYPE_CHECKING:
    from relay.store.database import Store

db_app = typer.Typer(help="Create and upgrade the database schema.", no_args_is_help=True)


def _store() -> Store:
    from relay.engine.store_setup import open_store

    return open_store(state.config(), check=False)


@db_app.command()
def upgrade(
    revision: Annotated[str, typer.Argument(help="Target revision.")] = "head",
) -> None:
    """Upgrade the database schema (creating it if empty)."""
    from relay.store import migrate

    store = _store()
    try:
        before = store.revision()
        migrate.upgrade(store, revision)
        after = store.revision()
    finally:
        store.dispose()
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
    from relay.core.errors import InvalidInput
    from relay.store import migrate

    if not yes:
        raise InvalidInput("downgrading can drop data; pass --yes to confirm")
    store = _store()
    try:
        migrate.downgrade(store, revision)
        render.line(f"database is at {store.revision() or 'base (empty)'}")
    finally:
        store.dispose()


@db_app.command()
def current(json_out: JsonOption = False) -> None:
    """Print the schema revision of the database and the one this relay needs."""
    from relay.store.database import HEAD_REVISION, is_newer

    store = _store()
    try:
        found = store.revision()
    finally:
        store.dispose()
    if json_out:
        render.emit_json(
            {"current": found, "head": HEAD_REVISION, "up_to_date": found == HEAD_REVISION}
        )
        return
    note = "up to date" if found == HEAD_REVISION else "run `relay db upgrade`"
    if found is not None and is_newer(found):
        note = "newer than this relay; upgrade relay"
    render.line(f"current: {found or 'none'}  head: {HEAD_REVISION}  ({note})")


def register(app: typer.Typer) -> None:
    app.add_typer(db_app, name="db")
