"""What holds a delivery until it fits a rate: a channel's own rate limits, and
an email channel's per-domain throttles and warm-up ramp. What does not fit
waits in the outbox; a held follow-up still counts its silence from when it went
out (:meth:`relay.engine.outbox.screen.Screen.move_heartbeats`).

A channel's rate is configured as ``rate = "30/minute"`` (also ``/second``,
``/hour``, ``/day``, plurals and short forms like ``/min``, ``/h``; several
joined by commas: ``"1/second, 500/day"``). Counting uses the store's sent
timestamps, so the limit holds across restarts and across daemons sharing one
database (within one batch, messages claimed together are counted in memory as
well). What mail providers accept from a sender is set on an email channel (one
sending mailbox)::

    [channels.email]
    # to each group of domains (one provider's), at most so many; "*": any other
    # domain, each counted on its own
    domain_rates = "gmail.com googlemail.com = 20/hour; outlook.com = 20/hour; * = 50/hour"
    # a new mailbox: 50 the first day, a quarter more each day after warmup_from
    warmup = "50/day +25%"
    warmup_from = "2026-11-20"
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from relay.core.errors import ConfigError
from relay.store import claims, domain_counts

if TYPE_CHECKING:
    from relay.config import Config

PERIODS = {
    "second": timedelta(seconds=1),
    "minute": timedelta(minutes=1),
    "hour": timedelta(hours=1),
    "day": timedelta(days=1),
}
#: The settings of a channel that hold its deliveries to a rate; a channel with none
#: of them is never asked about (:meth:`relay.engine.outbox.screen.Screen.limits_of`).
KEYS = ("rate", "domain_rates", "warmup")
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


# -- an email channel's domain throttles and warm-up -------------------------------------

#: The group of every domain no other group names; each is counted on its own.
ANY = "*"
_WARMUP = re.compile(r"^\s*(\d+)\s*/\s*day\s*\+\s*(\d+(?:\.\d+)?)\s*%\s*$", re.IGNORECASE)
DAY = timedelta(days=1)


@dataclass(frozen=True)
class DomainGroup:
    domains: tuple[str, ...]
    limits: tuple[Limit, ...]


def parse_domain_rates(channel: str, text: str) -> list[DomainGroup]:
    """``"gmail.com googlemail.com = 20/hour; * = 100/hour"`` as groups."""
    groups = []
    for part in (p.strip() for p in text.split(";") if p.strip()):
        names, sep, rate = part.partition("=")
        domains = tuple(d.strip().lower().lstrip("@") for d in names.replace(",", " ").split())
        if not sep or not domains or any(" " in d or not d for d in domains):
            raise ConfigError(
                f"channels.{channel}.domain_rates: {part!r}: use 'DOMAIN DOMAIN = 20/hour'"
            )
        groups.append(DomainGroup(domains, tuple(parse_rate(rate))))
    return groups


def group_for(groups: list[DomainGroup], address: str) -> tuple[str, ...] | None:
    """The domains counted together with ``address``'s, or None when no limit applies."""
    domain = address.rpartition("@")[2].lower()
    if not domain:
        return None
    for group in groups:
        if domain in group.domains:
            return group.domains
    if any(ANY in g.domains for g in groups):
        return (domain,)
    return None


def limits_for(groups: list[DomainGroup], domains: tuple[str, ...]) -> tuple[Limit, ...]:
    for group in groups:
        if set(domains) <= set(group.domains):
            return group.limits
    return next((g.limits for g in groups if ANY in g.domains), ())


@dataclass(frozen=True)
class Warmup:
    """A new mailbox's daily cap: ``first`` on day one, ``growth`` more each day."""

    first: int
    growth: float
    start: date

    def cap(self, now: datetime) -> int:
        days = max(0, (now.date() - self.start).days)
        # Past a few hundred days the cap is beyond any rate: stop growing it.
        return math.floor(self.first * (1 + self.growth) ** min(days, 400))


def parse_warmup(channel: str, spec: str, start: object) -> Warmup:
    match = _WARMUP.match(spec)
    if not match or int(match.group(1)) < 1:
        raise ConfigError(f"channels.{channel}.warmup: {spec!r}: use forms like '50/day +25%'")
    if start is None or not str(start).strip():
        raise ConfigError(f"channels.{channel}.warmup needs warmup_from (the ramp's first day)")
    try:
        first_day = start if isinstance(start, date) else date.fromisoformat(str(start).strip())
    except ValueError:
        raise ConfigError(f"channels.{channel}.warmup_from: {start!r} is not a date") from None
    return Warmup(int(match.group(1)), float(match.group(2)) / 100, first_day)


@dataclass
class MailLimits:
    """The domain throttles and warm-up of each channel, read once from its settings;
    what the outbox's screen asks before a delivery (``hold_until``) and tells after
    claiming one (``count``)."""

    config: Config
    _domains: dict[str, list[DomainGroup]] = field(default_factory=dict)
    _warmups: dict[str, Warmup | None] = field(default_factory=dict)
    _pending: dict[tuple[str, tuple[str, ...]], int] = field(default_factory=dict)

    def domains(self, channel: str) -> list[DomainGroup]:
        if channel not in self._domains:
            spec = self.config.get(f"channels.{channel}.domain_rates")
            self._domains[channel] = parse_domain_rates(channel, str(spec)) if spec else []
        return self._domains[channel]

    def warmup(self, channel: str) -> Warmup | None:
        if channel not in self._warmups:
            spec = self.config.get(f"channels.{channel}.warmup")
            start = self.config.get(f"channels.{channel}.warmup_from")
            self._warmups[channel] = parse_warmup(channel, str(spec), start) if spec else None
        return self._warmups[channel]

    def hold_until(self, session: Session, channel: str, now: datetime, to: str) -> datetime | None:
        """None if one more delivery to ``to`` fits now, else when it will."""
        holds = [self._warmup_hold(session, channel, now)]
        group = group_for(self.domains(channel), to) if "@" in to else None
        if group is not None:
            for limit in limits_for(self.domains(channel), group):
                holds.append(self._domain_hold(session, channel, group, limit, now))
        found = [h for h in holds if h is not None]
        return max(found) if found else None

    def _warmup_hold(self, session: Session, channel: str, now: datetime) -> datetime | None:
        ramp = self.warmup(channel)
        if ramp is None:
            return None
        sent, oldest = claims.sent_since(session, channel, now - DAY)
        if sent + self._pending.get((channel, ()), 0) < ramp.cap(now):
            return None
        return max((oldest or now) + DAY, now + timedelta(milliseconds=100))

    def _domain_hold(
        self,
        session: Session,
        channel: str,
        group: tuple[str, ...],
        limit: Limit,
        now: datetime,
    ) -> datetime | None:
        since = now - limit.period
        sent, oldest = domain_counts.sent_to_domains_since(session, channel, group, since)
        if sent + self._pending.get((channel, group), 0) < limit.count:
            return None
        return max((oldest or now) + limit.period, now + timedelta(milliseconds=100))

    def count(self, channel: str, to: str) -> None:
        """Note a delivery claimed in this batch (not yet in the store as sent)."""
        if self.warmup(channel) is not None:
            self._pending[(channel, ())] = self._pending.get((channel, ()), 0) + 1
        group = group_for(self.domains(channel), to) if "@" in to else None
        if group is not None:
            self._pending[(channel, group)] = self._pending.get((channel, group), 0) + 1

    def reset(self) -> None:
        self._pending.clear()


@dataclass
class Limits:
    """A channel's rate limits, domain throttles and warm-up together: what the
    outbox's screen asks before a delivery (``hold_until``) and tells after claiming
    one (``count``)."""

    config: Config
    rates: RateLimits = field(init=False)
    mail: MailLimits = field(init=False)

    def __post_init__(self) -> None:
        self.rates = RateLimits(self.config)
        self.mail = MailLimits(self.config)

    def hold_until(self, session: Session, channel: str, now: datetime, to: str) -> datetime | None:
        """None if one more delivery to ``to`` fits now, else when it will."""
        return self.rates.hold_until(session, channel, now) or self.mail.hold_until(
            session, channel, now, to
        )

    def count(self, channel: str, to: str) -> None:
        self.rates.count(channel)
        self.mail.count(channel, to)

    def reset(self) -> None:
        self.rates.reset()
        self.mail.reset()
