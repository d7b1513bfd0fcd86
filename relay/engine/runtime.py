"""What the engine's functions need of a relay: the store, the settings and the clock.

Turns, deliveries, heartbeats, pacing, unsubscribe links and retention are typed
against :class:`Runtime`: they cannot reach for a command verb (a pause, a
start) by accident, and a test or a program can drive them with anything that
has these three. The operator's verbs take a :class:`Context`, the runtime that
:class:`relay.api.Relay` holds: a Runtime that also knows who runs the commands
(for the audit log) and keeps the channels it built for checks and links.
"""

from __future__ import annotations

import getpass
from datetime import datetime
from typing import Any, Protocol

from relay.config import Config
from relay.core.clock import Clock, SystemClock
from relay.store.database import Store


class Runtime(Protocol):
    """The store, the configuration (with its typed settings) and the clock."""

    @property
    def store(self) -> Store: ...

    @property
    def config(self) -> Config: ...

    @property
    def clock(self) -> Clock: ...

    def now(self) -> datetime: ...


class Context:
    """The runtime of one open relay, passed to each verb."""

    def __init__(
        self, store: Store, config: Config, clock: Clock | None = None, actor: str | None = None
    ) -> None:
        self.store = store
        self.config = config
        self.clock: Clock = clock or SystemClock()
        #: Who runs operator commands, for the audit log (None: the OS user).
        self.actor = actor
        #: Channels built from their sections for checks and links, once per name
        #: (the dispatcher builds its own).
        self.channels: dict[str, Any] = {}

    def now(self) -> datetime:
        return self.clock.now()

    def who(self) -> str:
        if self.actor is None:
            self.actor = os_user()
        return self.actor


def os_user() -> str:
    """The person at the terminal (``--actor`` overrides it)."""
    try:
        return getpass.getuser() or "unknown"
    except Exception:  # no login name (a container without a passwd entry)
        return "unknown"
