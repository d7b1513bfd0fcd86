"""relay's public Python API: the one front door for a program.

Everything the ``relay`` command does, a program can do through :class:`Relay`
(the CLI is one of its callers)::

    from relay.api import Relay

    with Relay.open("relay.toml") as relay:
        started = relay.start("+15551230001", "Confirm the delivery", ["Which day suits you?"])
        print(started.id, started.state, started.first_message_status)
        while relay.instance(started.id).state not in ("COMPLETED", "ABANDONED", "FAILED"):
            relay.run_due()  # `relay tick`: heartbeats, turns, deliveries (or run `relay daemon`)
        for message in relay.transcript(started.id):
            print(message.author, message.text)

Errors are :class:`RelayError` subclasses that speak the domain (fields, not
flags); views are frozen dataclasses with ``to_json()``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from relay.config import Config, load_config
from relay.core.clock import Clock
from relay.core.errors import (
    Ambiguous,
    ConfigError,
    Conflict,
    InvalidInput,
    NotFound,
    OptedOut,
    Refused,
    RelayError,
    SchemaOutOfDate,
    Undeliverable,
)
from relay.engine.verbs import service
from relay.engine.views.events import EventView
from relay.engine.views.instances import (
    ContactView,
    InstanceView,
    MessageView,
    TransitionView,
)
from relay.engine.views.reports import ContactRow, InboxItem, ResultView, StatsView, WatchRow
from relay.engine.views.status import DaemonView, StatusView
from relay.store.opening import open_store

if TYPE_CHECKING:
    from relay.engine.backends import channels_of_type
    from relay.engine.contacts.chat_links import ChatLink
    from relay.engine.inbound.ingest import IngestReport
    from relay.engine.verbs.campaigns import ImportReport
    from relay.engine.verbs.doctor import Finding
    from relay.engine.verbs.drafts import DraftView
    from relay.engine.verbs.program import parse_meta
    from relay.inspection import inspect_address, inspect_mail, inspect_text
    from relay.runner.demo import DemoResult
    from relay.runner.logs import configure_logging
    from relay.runner.pulse import PulseReport

__all__ = [
    "Ambiguous",
    "ChatLink",
    "Config",
    "ConfigError",
    "Conflict",
    "ContactRow",
    "ContactView",
    "DaemonView",
    "DraftView",
    "EventView",
    "ImportReport",
    "InboxItem",
    "InstanceView",
    "InvalidInput",
    "MessageView",
    "NotFound",
    "OptedOut",
    "Refused",
    "Relay",
    "RelayError",
    "ResultView",
    "SchemaOutOfDate",
    "SchemaRevision",
    "StatsView",
    "StatusView",
    "TransitionView",
    "Undeliverable",
    "WatchRow",
    "channels_of_type",
    "configure_logging",
    "create_database",
    "daemon_log_path",
    "daemon_pid",
    "downgrade_schema",
    "inspect_address",
    "inspect_mail",
    "inspect_text",
    "load_config",
    "parse_meta",
    "run_demo",
    "schema_revision",
    "start_daemon",
    "stop_daemon",
    "upgrade_schema",
]

#: Names loaded on first use: most commands never import a CSV, parse --meta, link
#: a chat or configure the daemon's logging.
_LAZY = {
    "ChatLink": "relay.engine.contacts.chat_links",
    "DraftView": "relay.engine.verbs.drafts",
    "ImportReport": "relay.engine.verbs.campaigns",
    "channels_of_type": "relay.engine.backends",
    "configure_logging": "relay.runner.logs",
    "parse_meta": "relay.engine.verbs.program",
    "inspect_mail": "relay.inspection",
    "inspect_text": "relay.inspection",
    "inspect_address": "relay.inspection",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


class Relay(service.Relay):
    """Conversation commands over one store, with an injectable clock.

    Open it with :meth:`open` and close it (or use it as a context manager): it
    holds a database connection pool.
    """

    @classmethod
    def open(cls, config: Config | str | Path | None = None, clock: Clock | None = None) -> Relay:
        """Open the store a configuration names.

        ``config`` is a :class:`Config`, or the path of a ``relay.toml``, or None
        for what the ``relay`` command would use in the current directory
        (``RELAY_CONFIG``, ``./relay.toml`` if present, ``RELAY_*`` variables,
        then the built-in defaults: a SQLite file under ``.relay/``).
        """
        if not isinstance(config, Config):
            config = load_config(config)
        return super().open(config, clock)

    def close(self) -> None:
        self.store.dispose()

    def __enter__(self) -> Relay:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    # -- verbs that span the engine ------------------------------------------------

    def start(
        self, contact: str, objective: str, todos: Any, *, defer: bool = False, **options: Any
    ) -> InstanceView:
        """Create a conversation and, unless ``defer``, run its first turn now.

        The view's ``first_message`` and ``first_message_status`` say what was
        said and whether the channel took it (``sent``), will retry (``queued``),
        or did not (``failed``, ``blocked``); both are None when no first turn ran
        (deferred, queued behind another conversation, held for the window).
        """
        return super().start(contact, objective, todos, defer=defer, **options)

    def run_due(self, *, poll: bool = True, owner: str | None = None) -> PulseReport:
        """Do all work that is due now, once: poll channels, fire heartbeats, run
        turns, deliver (what ``relay tick`` does; a daemon does it on a schedule)."""
        import os
        import socket

        from relay.runner.pulse import Pulse

        who = owner or f"api:{socket.gethostname()}:{os.getpid()}"
        return Pulse(self, owner=who).run(poll=poll)

    def deliver(self, message_id: int) -> MessageView:
        """Try to deliver one queued message now, after what of its conversation is
        due before it (a conversation's messages go in order); it stays queued if it
        cannot go."""
        from relay.engine.backends import Channels
        from relay.engine.outbox.dispatcher import Dispatcher
        from relay.engine.verbs import operations

        batch = self.config.settings.daemon.batch
        Dispatcher(self, Channels(self)).deliver_due(batch, message_id=message_id)
        with self.store.read_transaction() as session:
            return operations.message_view(session, message_id)

    def check(self) -> list[Finding]:
        """Broken invariants and backends that cannot work (``relay doctor``)."""
        from relay.engine.verbs.doctor import examine

        return examine(self)

    def repair(self) -> list[Finding]:
        """Fix what can be fixed safely (``relay doctor --repair``)."""
        from relay.engine.verbs.doctor import repair

        return repair(self)

    def upgrade(self) -> None:
        """Migrate the database to this relay's schema (``relay db upgrade``)."""
        from relay.store.migrate import upgrade

        upgrade(self.store)

    def serve_mcp(
        self, *, http: bool = False, host: str | None = None, port: int | None = None
    ) -> None:
        """Serve the verbs as MCP tools on stdin/stdout until the client leaves, or with
        ``http`` over Streamable HTTP until SIGINT/SIGTERM, a bearer token required
        (``relay mcp [--http]``; needs ``relay-outreach[mcp]``)."""
        try:
            from relay.engine.verbs.mcp_server import serve
            from relay.runner import mcp_http
        except ImportError:
            raise ConfigError(
                "relay mcp needs the MCP SDK: pip install 'relay-outreach[mcp]'"
            ) from None
        mcp_http.serve(self, host, port) if http else serve(self)

    def poll(self, channel: str) -> IngestReport:
        """Ask one channel what arrived and store it with its new position."""
        position = self.channel_position(channel)
        from relay.engine.backends import Channels

        incoming = Channels(self).get(channel).poll(position)
        return self.ingest(channel, incoming, read_from=position)

    def notices(self) -> list[Finding]:
        """What breaks no rule but a person should look at: late replies, inbound
        from no usable address (``relay doctor`` prints them as warnings)."""
        from relay.engine.verbs.doctor import notices

        return notices(self)

    def run_daemon(self) -> None:
        """Be the daemon in this process until SIGTERM/SIGINT (``relay daemon``):
        holds the PID file under the data directory and, on SQLite, the database's
        daemon lock, so a second daemon here is refused."""
        from relay.runner.foreground import run_daemon

        run_daemon(self)

    def serve_http(self, host: str, port: int, *, max_body: int | None = None) -> None:
        """Serve the inbound HTTP endpoint until SIGTERM/SIGINT (``relay serve``)."""
        from relay.runner.serve import MAX_BODY, serve

        serve(self, host, port, max_body=max_body or MAX_BODY)

    # -- drafts a person approves (``[agent] approval``) -----------------------------

    def drafts(self, instance_id: str | None = None) -> list[DraftView]:
        """The agent's drafts awaiting approval, oldest first (``relay drafts``)."""
        from relay.engine.verbs import drafts

        return drafts.pending(self, instance_id)

    def approve(self, message_id: int, *, text: str | None = None) -> MessageView:
        """Send a draft, or ``text`` in its place (the edit is recorded); the message
        that goes out, queued: the delivery gate still decides (``relay approve``)."""
        from relay.engine.verbs import drafts

        return drafts.approve(self, message_id, actor=self.who(), text=text)

    def reject(self, message_id: int, *, reason: str) -> MessageView:
        """Discard a draft; the next turn reads ``reason`` (``relay reject``)."""
        from relay.engine.verbs import drafts

        return drafts.reject(self, message_id, actor=self.who(), reason=reason)

    # -- plain names for reads ------------------------------------------------------

    def instance(self, instance_id: str) -> InstanceView:
        return self.get(instance_id)


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
