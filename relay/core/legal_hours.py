"""Legal calling and texting hours by place, and when a proactive message may go.

The rules are a versioned table, ``relay/core/data/legal_hours.csv``: one row per
window of a place (a country, ``US``, or a US state, ``US-FL``), with the date it
took effect, the date relay's authors last checked it and its source. A place
with several rows (Texas: weekdays and Saturday 9-21, Sunday noon-21) allows a
moment any of its rows allows; a number in Florida is held by both the federal
rule and Florida's, and by the operator's sending window: a message goes only
when every one of them is open (:func:`next_allowed`), in the contact's time
zone (each of the number's zones, when the number spans several).

relay is not legal advice: the table is what its authors read, dated and
sourced per row so that an operator can check it (docs/compliance.md).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from functools import cache
from importlib import resources
from zoneinfo import ZoneInfo

from relay.core.windows import Window, next_open, parse_window

#: The table's version: the newest ``checked`` date of its rows.
TABLE = "legal_hours.csv"
#: How many times the constraints are walked before a window that never meets the
#: others is given up on (each step moves past at least one closed span).
_STEPS = 200


@dataclass(frozen=True)
class Rule:
    """One row of the table: a window of legal hours in a place."""

    place: str
    name: str
    window: Window
    text: str
    since: date
    checked: date
    source: str


@dataclass(frozen=True)
class Hours:
    """A place's legal hours: the union of its rows' windows."""

    place: str
    rules: tuple[Rule, ...]

    @property
    def name(self) -> str:
        return self.rules[0].name

    @property
    def windows(self) -> tuple[Window, ...]:
        return tuple(r.window for r in self.rules)

    def describe(self) -> str:
        """``Florida (US-FL): mon-sun 08:00-20:00; Fla. Stat. ... (since 2021-07-01)``."""
        spans = ", ".join(r.text for r in self.rules)
        sources = "; ".join(dict.fromkeys(r.source for r in self.rules))
        return f"{self.name} ({self.place}): {spans}; {sources} (since {self.rules[0].since})"


@cache
def table() -> dict[str, Hours]:
    """Every place of the packaged table, by place code."""
    text = resources.files("relay.core").joinpath("data", TABLE).read_text("utf-8")
    return parse_table(text)


def parse_table(text: str) -> dict[str, Hours]:
    rows: dict[str, list[Rule]] = {}
    for row in csv.DictReader(io.StringIO(text)):
        spec = f"{row['days']} {row['hours']}"
        rule = Rule(
            place=row["place"].strip().upper(),
            name=row["name"].strip(),
            window=parse_window(spec),
            text=spec,
            since=date.fromisoformat(row["since"]),
            checked=date.fromisoformat(row["checked"]),
            source=row["source"].strip(),
        )
        rows.setdefault(rule.place, []).append(rule)
    return {place: Hours(place, tuple(rules)) for place, rules in rows.items()}


def version() -> date:
    """The table's version: when its rows were last checked."""
    return max(rule.checked for hours in table().values() for rule in hours.rules)


def hours_for(country: str | None, subdivision: str | None) -> list[Hours]:
    """The places whose rules hold a number of ``country`` (``US``) in ``subdivision``
    (``FL``): the country's, then the subdivision's; those the table has."""
    if not country:
        return []
    found = table()
    places = [country.upper()]
    if subdivision:
        places.append(f"{country.upper()}-{subdivision.upper()}")
    return [found[p] for p in places if p in found]


@dataclass(frozen=True)
class Constraint:
    """Windows of which one must be open (a union), read in every one of ``zones``."""

    windows: tuple[Window, ...]
    zones: tuple[ZoneInfo, ...]

    def next_open(self, moment: datetime) -> datetime:
        """``moment`` if open then in every zone, else a later instant worth trying."""
        latest = moment
        for tz in self.zones:
            opens = min(next_open(w, moment, tz) for w in self.windows)
            latest = max(latest, opens)
        return latest


def skip_days(moment: datetime, tz: ZoneInfo, closed: Callable[[date], bool]) -> datetime:
    """``moment`` unless its local day is ``closed`` (a holiday), else the next
    local midnight of a day that is not."""
    day = moment.astimezone(tz).date()
    if not closed(day):
        return moment
    for offset in range(1, 15):
        if not closed(day + timedelta(days=offset)):
            start = datetime.combine(day + timedelta(days=offset), time(0), tz)
            return max(moment, start)
    return moment  # a fortnight of holidays: the table is wrong, not the contact


def next_allowed(
    moment: datetime,
    constraints: Sequence[Constraint],
    *,
    closed: Callable[[date], bool] | None = None,
    closed_zones: Iterable[ZoneInfo] = (),
) -> datetime | None:
    """The first instant from ``moment`` at which every constraint is open (and the
    day is not ``closed`` in any of ``closed_zones``); None if they never meet."""
    zones = tuple(closed_zones)
    current = moment
    for _ in range(_STEPS):
        later = current
        for constraint in constraints:
            later = max(later, constraint.next_open(current))
        if closed is not None:
            for tz in zones:
                later = max(later, skip_days(later, tz, closed))
        if later == current:
            return current
        current = later
    return None
