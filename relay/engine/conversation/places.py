"""Where a phone number is: its country, its US state or Canadian province, its time zones.

Read from the number alone with the phonenumbers library (its geocoder's
description of the area code, its time zones of the number's prefix), so a
contact without a time zone of its own is still written to in its local hours
and under its place's legal hours (:mod:`relay.core.legal_hours`). A number
keeps its area code when its owner moves (and ported or mobile numbers often
do): the contact's own time zone (``relay contact set --tz``) wins over the
number's, and docs/compliance.md says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from relay.core.legal_hours import Hours, hours_for, table

#: What the library answers for a prefix it cannot place.
_UNKNOWN_ZONE = "Etc/Unknown"


@dataclass(frozen=True)
class Place:
    country: str | None
    subdivision: str | None
    zones: tuple[str, ...]

    @property
    def code(self) -> str | None:
        if self.country and self.subdivision:
            return f"{self.country}-{self.subdivision}"
        return self.country

    def hours(self) -> list[Hours]:
        return hours_for(self.country, self.subdivision)


NOWHERE = Place(None, None, ())


@lru_cache(maxsize=4096)
def place_of(address: str) -> Place:
    """The place of a phone number in E.164 (anything else: :data:`NOWHERE`)."""
    if not address.startswith("+"):
        return NOWHERE
    import phonenumbers
    from phonenumbers import geocoder, timezone

    try:
        number = phonenumbers.parse(address)
    except phonenumbers.NumberParseException:
        return NOWHERE
    if not phonenumbers.is_valid_number(number):
        return NOWHERE
    country = phonenumbers.region_code_for_number(number)
    zones = tuple(z for z in timezone.time_zones_for_number(number) if z != _UNKNOWN_ZONE)
    subdivision = None
    if country in ("US", "CA"):
        subdivision = _subdivision(country, geocoder.description_for_number(number, "en"))
    return Place(country, subdivision, zones)


def _subdivision(country: str, description: str) -> str | None:
    """``FL`` from "Florida" (a name the rules table knows) or "Miami, FL"."""
    if not description:
        return None
    head, _, tail = description.rpartition(", ")
    if head and len(tail) == 2 and tail.isalpha():
        return tail.upper()
    for place, hours in table().items():
        if place.startswith(f"{country}-") and hours.name == description:
            return place.split("-", 1)[1]
    return None
