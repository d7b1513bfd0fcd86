"""The view of one entry of the event log (``relay events``, ``wait``, ``notify``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from relay.core.clock import isoformat


@dataclass(frozen=True)
class EventView:
    """One entry of the event log; ``id`` is its cursor (``relay events --since``)."""

    id: int
    kind: str
    instance_id: str | None
    actor: str | None
    data: dict[str, Any]
    meta: dict[str, Any]
    at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "cursor": str(self.id),
            "id": self.id,
            "kind": self.kind,
            "instance_id": self.instance_id,
            "actor": self.actor,
            "at": isoformat(self.at),
            "data": self.data,
            "meta": self.meta,
        }
