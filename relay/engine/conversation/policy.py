"""Where configuration meets an instance: when a proactive message may go to its contact.

Three things hold a proactive message (a first message, a follow-up): the
operator's sending window, the legal calling and texting hours of the contact's
place (``[compliance] legal_hours``, for phone numbers; see
:mod:`relay.core.legal_hours`) and, when ``[compliance] holidays`` is on, the
public holidays of the contact's country. It goes when all of them allow it,
read in the contact's time zone: its own, else the number's (each of them, when
the number spans several), else ``[defaults] timezone``. The outbox's gate and
the heartbeat ask the same question here, so they never disagree.

Where a phone number is (its country, its US state or Canadian province, its
time zones: :func:`place_of`) is read from the number alone with the
phonenumbers library (its time zones of the number's prefix) and, for a US or
Canadian number's state or province, the table made from its geocoder's
descriptions of the prefixes (:mod:`relay.engine.conversation.area_table`: the
geocoder itself costs a daemon 0.3 s of CPU and 100 MB to import). A number
keeps its area code when its owner
moves (and ported or mobile numbers often do): the contact's own time zone
(``relay contact set --tz``) wins over the number's, and docs/compliance.md
says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import cache, lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from sqlalchemy import Row
from sqlalchemy.orm import Session

from relay.config import Config
from relay.core.errors import InvalidInput, RelayError
from relay.core.legal_hours import Constraint, Hours, hours_for, next_allowed, table
from relay.core.windows import Window, parse_window, zone
from relay.store import contacts

if TYPE_CHECKING:
    from relay.store.hotpath.locked_rows import InstanceFields


#: How long a message whose hours can never be met waits before it is looked at again.
NEVER_OPEN_RETRY = timedelta(hours=1)


def window_of(instance: InstanceFields | Row[Any] | None, config: Config) -> Window | None:
    """The conversation's sending window (None: ``[defaults] window``, for a contact)."""
    spec = (instance.window if instance is not None else None) or config.settings.defaults.window
    return parse_window(spec) if spec and spec.strip() else None


def zone_of(timezone: str | None, config: Config) -> ZoneInfo:
    return zone(timezone or config.settings.defaults.timezone)


@dataclass(frozen=True)
class Hold:
    """What holds proactive messages to one contact, and why (``relay contact show``)."""

    window: Window | None
    zones: tuple[ZoneInfo, ...]
    legal: tuple[Hours, ...]
    country: str | None
    holidays: bool
    #: Where the zones came from: the contact's own, the number's area, the default.
    zone_from: str = "[defaults] timezone"
    #: The place of the number (``US-FL``), when known.
    place: str | None = None

    def constraints(self) -> list[Constraint]:
        found = [Constraint((self.window,), self.zones)] if self.window else []
        return found + [Constraint(h.windows, self.zones) for h in self.legal]

    def describe(self) -> str | None:
        """The legal rules that apply and why, or None when none does."""
        if not self.legal:
            return None
        where = ", ".join(z.key for z in self.zones)
        rules = "; ".join(h.describe() for h in self.legal)
        return (
            f"{rules}. Why: the number is in {self.place}; hours read in {where} "
            f"({self.zone_from}); the stricter of these and the sending window wins"
        )


def hold_for(window: Window | None, address: str, timezone: str | None, config: Config) -> Hold:
    """What holds proactive messages to a contact at ``address`` with ``timezone``
    (asked twice a follow-up, by the heartbeat and the outbox: kept)."""
    compliance = config.settings.compliance
    default = config.settings.defaults.timezone
    return _hold(window, address, timezone, compliance.legal_hours, compliance.holidays, default)


@lru_cache(maxsize=65_536)
def _hold(
    window: Window | None,
    address: str,
    timezone: str | None,
    legal_hours: bool,
    holidays: bool,
    default: str | None,
) -> Hold:
    place = None
    if address.startswith("+"):
        place = place_of(address)
    if timezone:
        zones: tuple[ZoneInfo, ...] = (zone(timezone),)
        source = "the contact's time zone"
    elif place is not None and place.zones:
        zones = tuple(zone(z) for z in place.zones)
        source = "the number's area" if len(zones) == 1 else "every zone of the number's area"
    else:
        zones, source = (zone(default),), "[defaults] timezone"
    legal = tuple(place.hours()) if place is not None and legal_hours else ()
    country = place.country if place is not None else None
    code = place.code if place is not None else None
    return Hold(window, zones, legal, country, holidays and country is not None, source, code)


def opens(hold: Hold, now: datetime) -> datetime:
    """``now`` if a proactive message may go now, else when it may."""
    constraints = hold.constraints()
    closed = _holidays(hold.country) if hold.holidays else None
    if not constraints and closed is None:
        return now
    when = next_allowed(now, constraints, closed=closed, closed_zones=hold.zones)
    if when is None:
        legal = " and ".join(h.name for h in hold.legal) or "the holidays"
        raise InvalidInput(f"the sending window never meets the legal hours of {legal}")
    return when


def send_opens(
    instance: InstanceFields | Row[Any] | None,
    address: str,
    timezone: str | None,
    config: Config,
    now: datetime,
) -> datetime | None:
    """When a proactive message (a first message, a follow-up) to the contact at
    ``address`` may go, if not now. The outbox asks at send time, not only when the
    turn was scheduled: a message held by a rate limit or a retry must not reach the
    contact at 3 a.m. because it was written at 5 p.m."""
    try:
        hold = hold_for(window_of(instance, config), address, timezone, config)
        if hold.window is None and not hold.legal and not hold.holidays:
            return None
        when = opens(hold, now)
    except RelayError:
        # Hours that can never be met: held, never sent at a forbidden time (the
        # heartbeat hands such a conversation to a person).
        return now + NEVER_OPEN_RETRY
    return when if when > now else None


def next_window_open(
    session: Session,
    instance: InstanceFields | Row[Any],
    config: Config,
    now: datetime,
    places: Mapping[int, tuple[str, str | None]] | None = None,
) -> datetime:
    """``now`` if proactive messages may go to this instance's contact now, else when they
    may; ``places``: the contacts' addresses and zones read for a batch (:func:`places_of`)."""
    window = window_of(instance, config)
    if window is None and not needs_place(config):
        return now  # no window, no rules: no need to read the contact
    if places is None or instance.contact_id not in places:
        places = contacts.place_facts(session, [instance.contact_id])
    address, timezone = places[instance.contact_id]
    return opens(hold_for(window, address, timezone, config), now)


def needs_place(config: Config) -> bool:
    compliance = config.settings.compliance
    return compliance.legal_hours or compliance.holidays


def places_of(
    session: Session, instances: Sequence[InstanceFields | Row[Any]], config: Config
) -> dict[int, tuple[str, str | None]]:
    """The places of a batch's contacts in one query (none when no rule reads them)."""
    if not instances or not (needs_place(config) or config.settings.defaults.window):
        return {}
    return contacts.place_facts(session, {i.contact_id for i in instances})


@cache
def _holidays(country: str | None) -> Callable[[date], bool] | None:
    """Whether a day is a public holiday of ``country`` (the ``holidays`` package,
    imported only when ``[compliance] holidays`` is on)."""
    if country is None:
        return None
    try:
        import holidays
    except ImportError:
        raise InvalidInput(
            "[compliance] holidays needs the holidays package: pip install "
            "'relay-outreach[holidays]'"
        ) from None
    try:
        calendar = holidays.country_holidays(country)
    except NotImplementedError:
        return None
    return lambda day: day in calendar


# -- where a phone number is -------------------------------------------------------------

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

    number = _e164(address)
    if number is None:
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


def _e164(address: str) -> Any:
    """``address`` as a ``phonenumbers.PhoneNumber``, None if it cannot be anyone's.

    A number as relay stores it (E.164: "+" and digits, no trunk prefix) is
    split at its country code, at a fifth of the cost of ``phonenumbers.parse``
    (a dozen patterns meant for numbers as people write them), which reads
    anything else the way it always did; and a +1 number whose area code would
    start with 1 is nobody's without trying each of the plan's regions in turn.
    """
    digits = address[1:]
    if address[:1] == "+" and digits.isascii() and digits.isdigit() and digits[:1] > "0":
        code = next((int(digits[:n]) for n in (1, 2, 3) if int(digits[:n]) in _countries()), 0)
        national = digits[len(str(code)) :] if code else ""
        if code == 1 and national[:1] == "1" and len(national) != 11:
            return None  # an area code never starts with 1; 1 and ten digits: a trunk prefix
        if national[:1] > "0" and len(digits) <= 17 and not _trunk_prefix(code).match(national):
            from phonenumbers import PhoneNumber

            return PhoneNumber(country_code=code, national_number=int(national))
    import phonenumbers  # a leading zero, a trunk prefix, any other writing

    try:
        return phonenumbers.parse(address)
    except phonenumbers.NumberParseException:
        return None


@cache
def _countries() -> Mapping[int, Any]:
    from phonenumbers import COUNTRY_CODE_TO_REGION_CODE

    return COUNTRY_CODE_TO_REGION_CODE


@cache
def _trunk_prefix(code: int) -> re.Pattern[str]:
    """What ``phonenumbers.parse`` would strip from the start of a national number
    of ``code`` (a pattern that never matches when nothing)."""
    from phonenumbers import PhoneMetadata, region_code_for_country_code

    metadata = PhoneMetadata.metadata_for_region_or_calling_code(
        code, region_code_for_country_code(code)
    )
    pattern = metadata.national_prefix_for_parsing if metadata is not None else None
    return re.compile(pattern) if pattern else re.compile(r"(?!)")


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
