"""What a program does around a :class:`relay.api.Relay` rather than through one:
create and migrate the database, start and stop the daemon as a process, run the
demo. :mod:`relay.api` re-exports each name; import them from there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from relay.config import Config
from relay.store.opening import open_store

if TYPE_CHECKING:
    from relay.runner.demo import DemoResult


# -- the database, before a Relay can be opened ------------------------------------


@dataclass(frozen=True)
class SchemaRevision:
    """The schema revision a database is at, and the one this relay needs."""

    current: str | None
    head: str

    @property
    def up_to_date(self) -> bool:
        return self.current == self.head

    @property
    def newer(self) -> bool:
        """The database was migrated by a newer relay."""
        from relay.store.database import is_newer

        return self.current is not None and is_newer(self.current)


def create_database(config: Config) -> None:
    """Create and migrate the configured database if it is empty (``relay init``)."""
    open_store(config.database_url, create=True).dispose()


def schema_revision(config: Config) -> SchemaRevision:
    from relay.store.database import HEAD_REVISION

    store = open_store(config.database_url, check=False)
    try:
        return SchemaRevision(store.revision(), HEAD_REVISION)
    finally:
        store.dispose()


def upgrade_schema(config: Config, revision: str = "head") -> tuple[str | None, str | None]:
    """Migrate the database up to ``revision``; returns the revisions before and after."""
    from relay.store import migrate

    store = open_store(config.database_url, check=False)
    try:
        before = store.revision()
        migrate.upgrade(store, revision)
        return before, store.revision()
    finally:
        store.dispose()


def downgrade_schema(config: Config, revision: str) -> str | None:
    """Migrate the database down to ``revision`` (``base`` drops everything); this
    destroys what the older schema has no room for. Returns the revision after."""
    from relay.store import migrate

    store = open_store(config.database_url, check=False)
    try:
        migrate.downgrade(store, revision)
        return store.revision()
    finally:
        store.dispose()


# -- the daemon as a process ---------------------------------------------------------


def daemon_log_path(config: Config) -> Path:
    """Where a detached daemon logs unless told otherwise."""
    from relay.runner import process

    return config.data_dir / process.LOG_NAME


def daemon_pid(config: Config) -> int | None:
    """The pid of the daemon started for this configuration's data directory, if it runs."""
    from relay.runner import process

    return process.running_pid(config.data_dir / process.PID_NAME)


def stop_daemon(config: Config, timeout: float = 30.0) -> int | None:
    """SIGTERM the daemon started here and wait for it to stop; its pid, or None if
    none was running."""
    from relay.runner import process

    return process.stop(config.data_dir / process.PID_NAME, timeout)


def start_daemon(config: Config, cli_args: list[str], log_path: Path) -> int:
    """Start ``relay CLI_ARGS`` as a detached daemon and wait until it has taken
    its PID file; returns its pid. Refused (a :class:`RelayError`) while one runs."""
    from relay.runner import process

    return process.spawn_daemon(cli_args, config.data_dir / process.PID_NAME, log_path)


def run_demo(on_event: Callable[[str], None] = lambda _: None) -> DemoResult:
    """A whole conversation on a throw-away database with a simulated contact
    (``relay demo``); ``on_event`` hears each step as a line of text."""
    from relay.runner.demo import run_demo

    return run_demo(on_event)
