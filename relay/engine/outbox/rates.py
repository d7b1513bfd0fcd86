"""Per-channel rate limits: deliveries past the limit wait in the outbox until they fit.

Configured per channel as ``rate = "30/minute"`` (also ``/second``, ``/hour``,
``/day``, plurals and short forms like ``/min``, ``/h``; several joined by
commas: ``"1/second, 500/day"``). Counting uses the
store's sent timestamps, so the limit holds across restarts and across
daemons sharing one database (within one batch, messages claimed together
are counted in memory as well).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from relay.core.errors import ConfigError
from relay.store import claims

if TYPE_CHECKING:
    from relay.config import Config

PERIODS = {
    "second": timedelta(seconds=1),
    "minute": timedelta(minutes=1),
    "hour": timedelta(hours=1),
    "day": timedelta(days=1),
}
#: Short forms people write: ``30/min``, ``500/h``, ``1000/d``.
ALIASES = {
    "s": "second",
    "sec": "second",
    "m": "minute",
    "min": "minute",
    "h": "hour",
    "hr": "hour",
    "d": "day",
}


@dataclass(frozen=True)
class Limit:
    count: int
    period: timedelta


def parse_rate(text: str) -> list[Limit]:
    limits = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        number, _, raw_unit = part.partition("/")
        unit = raw_unit.strip().lower()
        unit = ALIASES.get(unit, unit.removesuffix("s"))
        try:
            count = int(number.strip())
        except ValueError:
            count = 0
        if count <= 0 or unit not in PERIODS:
            raise ConfigError(f"invalid rate {part!r}: use forms like 30/minute, 1000/day")
        limits.append(Limit(count, PERIODS[unit]))
    return limits


@dataclass
class RateLimits:
    config: Config
    _limits: dict[str, list[Limit]] = field(default_factory=dict)
    _pending: dict[str, int] = field(default_factory=dict)

    def limits(self, channel: str) -> list[Limit]:
        if channel not in self._limits:
            spec = self.config.get(f"channels.{channel}.rate")
            self._limits[channel] = parse_rate(str(spec)) if spec else []
        return self._limits[channel]

    def hold_until(self, session: Session, channel: str, now: datetime) -> datetime | None:
        """None if one more delivery fits every limit now, else when it will."""
        later: datetime | None = None
        for limit in self.limits(channel):
            sent, oldest = claims.sent_since(session, channel, now - limit.period)
            if sent + self._pending.get(channel, 0) >= limit.count:
                when = (oldest or now) + limit.period
                when = max(when, now + timedelta(milliseconds=100))
                later = when if later is None else max(later, when)
        return later

    def count(self, channel: str) -> None:
        """Note a delivery claimed in this batch (not yet in the store as sent)."""
        if self.limits(channel):
            self._pending[channel] = self._pending.get(channel, 0) + 1

    def reset(self) -> None:
        self._pending.clear()
