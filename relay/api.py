"""relay's public Python API: the one front door for a program.

Everything the ``relay`` command does, a program can do through :class:`Relay`
(the CLI is one of its callers)::

    from relay.api import Relay

    with Relay.open("relay.toml") as relay:
        started = relay.start("+15551230001", "Confirm the delivery", ["Which day suits you?"])
        print(started.id, started.state, started.first_message_status)
        while relay.instance(started.id).state not in ("COMPLETED", "ABANDONED", "FAILED"):
            relay.run_due()          # what `relay tick` does: heartbeats, turns, deliveries
            ...                      # wait a while (or let `relay daemon` do this)
        for message in relay.transcript(started.id):
            print(message.author, message.text)

Errors are :class:`RelayError` subclasses that speak the domain (fields, not
flags); views are frozen dataclasses with ``to_json()``.
"""

from __future__ import annotations

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
from relay.engine import service
from relay.engine.campaigns import ImportReport
from relay.engine.program import parse_meta
from relay.engine.report_views import (
    ContactRow,
    EventView,
    InboxItem,
    ResultView,
    StatsView,
    WatchRow,
)
from relay.engine.views import (
    ContactView,
    DaemonView,
    InstanceView,
    MessageView,
    StatusView,
    TransitionView,
)

if TYPE_CHECKING:
    from relay.engine.doctor import Finding
    from relay.engine.inbound import IngestReport
    from relay.engine.pulse import PulseReport

__all__ = [
    "Ambiguous",
    "Config",
    "ConfigError",
    "Conflict",
    "ContactRow",
    "ContactView",
    "DaemonView",
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
    "StatsView",
    "StatusView",
    "TransitionView",
    "Undeliverable",
    "WatchRow",
    "load_config",
    "parse_meta",
]


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
        from relay.engine.store_setup import open_store

        if not isinstance(config, Config):
            config = load_config(config)
        return cls(open_store(config), config, clock)

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

        from relay.engine.pulse import Pulse

        who = owner or f"api:{socket.gethostname()}:{os.getpid()}"
        return Pulse(self, owner=who).run(poll=poll)

    def deliver(self, message_id: int) -> MessageView:
        """Try to deliver one queued message now; it stays queued if it cannot go."""
        from relay.engine.outbox import deliver_one

        return deliver_one(self, message_id)

    def check(self) -> list[Finding]:
        """Broken invariants and backends that cannot work (``relay doctor``)."""
        from relay.engine.doctor import examine

        return examine(self)

    def repair(self) -> list[Finding]:
        """Fix what can be fixed safely (``relay doctor --repair``)."""
        from relay.engine.doctor import repair

        return repair(self)

    def upgrade(self) -> None:
        """Migrate the database to this relay's schema (``relay db upgrade``)."""
        from relay.store.migrate import upgrade

        upgrade(self.store)

    def serve_mcp(self) -> None:
        """Serve the verbs as MCP tools on stdin/stdout until the client leaves
        (``relay mcp``; needs ``relay-outreach[mcp]``)."""
        try:
            from relay.engine.mcp_server import serve
        except ImportError:
            raise ConfigError(
                "relay mcp needs the MCP SDK: pip install 'relay-outreach[mcp]'"
            ) from None
        serve(self)

    def poll(self, channel: str) -> IngestReport:
        """Ask one channel what arrived and store it with its new position."""
        position = self.channel_position(channel)
        from relay.engine.outbox import Channels

        incoming = Channels(self).get(channel).poll(position)
        return self.ingest(channel, incoming, read_from=position)

    # -- plain names for reads ------------------------------------------------------

    def instance(self, instance_id: str) -> InstanceView:
        return self.get(instance_id)
