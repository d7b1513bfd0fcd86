"""The daemon's line a minute: what it did since the last one (``relay daemon``
in the foreground prints it; a quiet minute prints nothing)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from relay.runner.pulse import PulseReport


@dataclass
class MinuteSummary:
    """What the daemon did since the last summary line; pulses add, the summary
    job reads and resets (both under the lock: they run on different threads)."""

    counts: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    LABELS = (
        ("turns", "turn(s)"),
        ("sent", "sent"),
        ("retried", "retried"),
        ("failed", "failed"),
        ("blocked", "blocked"),
        ("fired", "heartbeat(s)"),
        ("abandoned", "abandoned"),
        ("resumed", "snooze(s) ended"),
        ("inbound", "inbound"),
        ("errors", "error(s)"),
    )

    def add(self, report: PulseReport | None = None, *, inbound: int = 0) -> None:
        found = {"inbound": inbound}
        if report is not None:
            d = report.delivery
            found |= {
                "turns": len(report.turns),
                "sent": d.sent,
                "retried": d.retried,
                "failed": d.failed,
                "blocked": d.blocked,
                "fired": report.fired,
                "abandoned": report.abandoned,
                "resumed": report.resumed,
                "inbound": inbound + report.polled + report.pushed,
                "errors": len(report.errors),
            }
        with self.lock:
            for key, value in found.items():
                if value:
                    self.counts[key] = self.counts.get(key, 0) + value

    def take(self) -> str | None:
        """The line for the minute gone (None if nothing happened), and a fresh count."""
        with self.lock:
            counts, self.counts = self.counts, {}
        parts = [f"{counts[key]} {label}" for key, label in self.LABELS if counts.get(key)]
        return "last minute: " + ", ".join(parts) if parts else None
