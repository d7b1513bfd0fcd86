"""What ``relay status`` shows: instances per state, the queue, the outbox, the
daemons alive, and the warnings that need a person."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from relay.core.clock import isoformat


@dataclass(frozen=True)
class DaemonView:
    id: str
    host: str
    pid: int
    started_at: datetime
    last_pulse_at: datetime | None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "host": self.host,
            "pid": self.pid,
            "started_at": isoformat(self.started_at),
            "last_pulse_at": isoformat(self.last_pulse_at),
        }


@dataclass(frozen=True)
class StatusView:
    states: dict[str, int]
    queue_depth: int
    outbox_pending: int
    outbox_failed: int
    unrouted_inbound: int
    work_due: int
    #: Inbound kept on conversations that had already ended, not yet looked at.
    late_inbound: int = 0
    #: Inbound kept aside because its sender is no address relay can use.
    rejected_inbound: int = 0
    daemons: tuple[DaemonView, ...] = ()
    last_daemon_seen: datetime | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return {
            "states": self.states,
            "queue_depth": self.queue_depth,
            "outbox_pending": self.outbox_pending,
            "outbox_failed": self.outbox_failed,
            "unrouted_inbound": self.unrouted_inbound,
            "late_inbound": self.late_inbound,
            "rejected_inbound": self.rejected_inbound,
            "work_due": self.work_due,
            "daemons": [d.to_json() for d in self.daemons],
            "last_daemon_seen": isoformat(self.last_daemon_seen),
            "warnings": list(self.warnings),
        }
