"""Where a phone number is: its country, its US state or Canadian province, its time zones.

Read from the number alone with the phonenumbers library (its time zones of the
number's prefix) and, for a US or Canadian number's state or province, the table
made from its geocoder's descriptions of the prefixes
(:mod:`relay.engine.conversation.area_table`: the geocoder itself costs a daemon
0.3 s of CPU and 100 MB to import), so a
contact without a time zone of its own is still written to in its local hours
and under its place's legal hours (:mod:`relay.core.legal_hours`). A number
keeps its area code when its owner moves (and ported or mobile numbers often
do): the contact's own time zone (``relay contact set --tz``) wins over the
number's, and docs/compliance.md says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

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


#: Places kept (a few hundred bytes each). A daemon asks twice a follow-up, in due
#: order: a cache smaller than the due backlog misses every time (issue 31 measured
#: 4,096 against 5,000 due: 10 % of a follow-up's CPU in parsing numbers again).
PLACES_KEPT = 65_536


@lru_cache(maxsize=PLACES_KEPT)
def place_of(address: str) -> Place:
    """The place of a phone number in E.164 (anything else: :data:`NOWHERE`)."""
    if not address.startswith("+"):
        return NOWHERE
    import phonenumbers
    from phonenumbers import timezone

    try:
        number = phonenumbers.parse(address)
    except phonenumbers.NumberParseException:
        return NOWHERE
    # The number's region, worked out once (a +1 number is tried against every
    # region of the plan): is_valid_number, number_type and time_zones_for_number
    # would each work it out again.
    country = phonenumbers.region_code_for_number(number)
    if country is None or not phonenumbers.is_valid_number_for_region(number, country):
        return NOWHERE
    kind = phonenumbers.number_type(number)
    geographical = phonenumbers.is_number_type_geographical(kind, number.country_code or 0)
    if geographical:
        found = timezone.time_zones_for_geographical_number(number)
    else:
        found = timezone.time_zones_for_number(number)
    zones = tuple(z for z in found if z != _UNKNOWN_ZONE)
    subdivision = None
    if country in ("US", "CA") and geographical:
        digits = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)[1:]
        subdivision = subdivision_of(country, _area_answer(digits))
    return Place(country, subdivision, zones)


def answer_of(description: str) -> str:
    """What a geocoder description says of a subdivision: ``FL`` from "Miami, FL",
    ``US-FL`` from "Florida" (a name the rules table knows, of that country only),
    else nothing ("")."""
    head, _, tail = description.rpartition(", ")
    if head and len(tail) == 2 and tail.isalpha():
        return tail.upper()
    for place, hours in table().items():
        if "-" in place and hours.name == description:
            return place
    return ""


def subdivision_of(country: str, answer: str) -> str | None:
    """The subdivision of a number of ``country`` with the table's ``answer``."""
    if "-" in answer:
        of, subdivision = answer.split("-", 1)
        return subdivision if of == country else None
    return answer or None


def _area_answer(digits: str) -> str:
    """The answer of the longest prefix of ``digits`` in the table ("": none)."""
    areas = _areas()
    for length in range(min(len(digits), 7), 3, -1):
        found = areas.get(digits[:length])
        if found is not None:
            return found
    return ""


@lru_cache(maxsize=1)
def _areas() -> dict[str, str]:
    """The table by prefix (``relay/core/data/nanp_areas.txt``; see area_table)."""
    text = resources.files("relay.core").joinpath("data", "nanp_areas.txt").read_text()
    found: dict[str, str] = {}
    for line in text.splitlines():
        area, answer, rest = line.split("\t")
        found[area] = answer
        for group in filter(None, rest.split(";")):
            answer, suffixes = group.split(":", 1)
            found.update((area + suffix, answer) for suffix in suffixes.split())
    return found
