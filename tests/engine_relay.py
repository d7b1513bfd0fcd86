"""The facade as the engine's and the daemon's tests drive it: ``start`` defers the
first turn unless told otherwise, so a test runs the turns itself (through a pulse,
a turn runner); a program's ``relay.api.Relay.start`` runs it at once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from relay.api import InstanceView, Relay


class EngineRelay(Relay):
    def start(
        self,
        contact: str,
        objective: str,
        todos: Sequence[str | Mapping[str, Any]],
        *,
        defer: bool = True,
        **options: Any,
    ) -> InstanceView:
        return super().start(contact, objective, todos, defer=defer, **options)
