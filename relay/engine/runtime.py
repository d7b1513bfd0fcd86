"""What the daemon's machinery needs of a relay: the store, the settings and the clock.

Turns, deliveries, heartbeats, pacing, unsubscribe links and retention are typed
against :class:`Runtime`, not the whole :class:`relay.engine.verbs.service.Relay`:
they cannot reach for a command verb (a pause, a start) by accident, and a
test or a program can drive them with anything that has these three. A
``Relay`` is one (mypy checks it where one is passed).
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from relay.config import Config
from relay.core.clock import Clock
from relay.store.database import Store


class Runtime(Protocol):
    """The store, the configuration (with its typed settings) and the clock."""

    store: Store
    config: Config
    clock: Clock

    def now(self) -> datetime: ...
