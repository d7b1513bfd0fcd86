"""Legal calling and texting hours (issue 30, item 2): the rules table
(relay/core/data/legal_hours.csv), a number's place and zone, and the moment a
proactive message may go, table-driven across the 2026 US daylight-saving changes
(8 March, 1 November)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from relay.config import load_config
from relay.core.legal_hours import Constraint, hours_for, next_allowed, parse_table, table, version
from relay.core.windows import parse_window, zone
from relay.engine.conversation import policy
from relay.engine.conversation.policy import place_of

FLORIDA, CONNECTICUT = "+13055550123", "+12035550100"
TEXAS, CALIFORNIA = "+12145550100", "+14155550100"
OKLAHOMA, MARYLAND, UNKNOWN = "+14055550100", "+13015550100", "+15551230001"
MADRID, PARIS, TORONTO = "+34911234567", "+33123456789", "+19055550100"


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_every_row_has_a_date_a_check_and_a_source() -> None:
    rows = [rule for hours in table().values() for rule in hours.rules]
    assert len({r.place for r in rows}) >= 10
    for rule in rows:
        assert rule.since <= rule.checked <= version()
        assert len(rule.source) > 10, rule
    assert {"US", "US-FL", "US-CT", "US-TX", "CA", "ES", "FR", "AU"} <= set(table())
    texas = table()["US-TX"]
    assert [r.text for r in texas.rules] == ["mon-sat 09:00-21:00", "sun 12:00-21:00"]


def test_a_bad_row_is_refused() -> None:
    with pytest.raises(Exception, match="invalid"):
        parse_table(
            "place,name,days,hours,since,checked,source\nXX,X,mon,9-17,2020-01-01,2020-01-01,s\n"
        )


@pytest.mark.parametrize(
    ("number", "country", "subdivision", "zones"),
    [
        (FLORIDA, "US", "FL", ("America/New_York",)),
        (CONNECTICUT, "US", "CT", ("America/New_York",)),
        (TEXAS, "US", "TX", ("America/Chicago",)),
        (CALIFORNIA, "US", "CA", ("America/Los_Angeles",)),
        (OKLAHOMA, "US", "OK", ("America/Chicago",)),
        (MARYLAND, "US", "MD", ("America/New_York",)),
        (MADRID, "ES", None, ("Europe/Madrid",)),
        (UNKNOWN, None, None, ()),
        ("ana@example.com", None, None, ()),
    ],
)
def test_the_place_of_a_number(
    number: str, country: str | None, subdivision: str | None, zones: tuple[str, ...]
) -> None:
    place = place_of(number)
    assert (place.country, place.subdivision, place.zones) == (country, subdivision, zones)


def _numbers() -> list[str]:
    """Every region's example numbers and 4,500 random ones (any country code,
    any length, leading zeros and 1s included), plus a few writings that are not
    E.164 at all."""
    import random

    import phonenumbers

    pick = random.Random(31)
    codes = sorted(phonenumbers.COUNTRY_CODE_TO_REGION_CODE) + [1] * 20
    numbers = [
        f"+{pick.choice(codes)}{''.join(pick.choices('0123456789', k=pick.randint(1, 15)))}"
        for _ in range(4_000)
    ]
    numbers += [
        "+" + "".join(pick.choices("0123456789", k=pick.randint(1, 18))) for _ in range(500)
    ]
    for region in sorted(phonenumbers.SUPPORTED_REGIONS):
        for kind in range(11):
            example = phonenumbers.example_number_for_type(region, kind)
            if example is not None:
                numbers.append(phonenumbers.format_number(example, 0))
    return [*numbers, "+", "+1", "+1 212 555 0123", "+1-212-555-0123", "+0499213397", "+١٢١٢٥"]


def test_a_number_is_read_as_phonenumbers_parse_reads_it() -> None:
    """The split at the country code (policy._e164) gives the number parse gives,
    for every number either reads as someone's."""
    import phonenumbers

    def valid(number: phonenumbers.PhoneNumber | None) -> phonenumbers.PhoneNumber | None:
        if number is None:
            return None
        region = phonenumbers.region_code_for_number(number)
        ok = region is not None and phonenumbers.is_valid_number_for_region(number, region)
        return number if ok else None

    def parsed(address: str) -> phonenumbers.PhoneNumber | None:
        try:
            return valid(phonenumbers.parse(address))
        except phonenumbers.NumberParseException:
            return None

    numbers = _numbers()
    differ = [a for a in numbers if valid(policy._e164(a)) != parsed(a)]
    assert differ == []
    assert sum(parsed(a) is not None for a in numbers) > 1_000  # the valid ones are many


def test_a_state_is_held_by_the_federal_rule_and_its_own() -> None:
    assert [h.place for h in hours_for("US", "FL")] == ["US", "US-FL"]
    assert [h.place for h in hours_for("US", "CA")] == ["US"]  # California: federal only
    assert hours_for(None, None) == []


#: (number, contact's own zone, operator window, now (UTC), when it may go (UTC)).
CASES = [
    # Florida 8-20 within an operator window of 8-21: nothing after 20:00 local.
    (FLORIDA, None, "08:00-21:00", "2026-03-06T00:59:00", "2026-03-06T00:59:00"),  # 19:59 EST
    (FLORIDA, None, "08:00-21:00", "2026-03-06T01:00:00", "2026-03-06T13:00:00"),  # 20:00 EST
    (FLORIDA, None, "08:00-21:00", "2026-03-08T01:30:00", "2026-03-08T12:00:00"),  # DST starts
    (FLORIDA, None, "08:00-21:00", "2026-03-10T00:00:00", "2026-03-10T12:00:00"),  # 20:00 EDT
    (FLORIDA, None, "08:00-21:00", "2026-11-01T00:15:00", "2026-11-01T13:00:00"),  # DST ends
    (FLORIDA, None, "08:00-21:00", "2026-03-09T23:59:00", "2026-03-09T23:59:00"),  # 19:59 EDT
    # The contact's own zone wins over the number's.
    (FLORIDA, "America/Los_Angeles", "08:00-21:00", "2026-03-10T02:30:00", "2026-03-10T02:30:00"),
    (FLORIDA, "America/Los_Angeles", "08:00-21:00", "2026-03-10T03:00:00", "2026-03-10T15:00:00"),
    # Connecticut 9-20: later than the window's 8:00.
    (CONNECTICUT, None, "08:00-21:00", "2026-03-09T12:30:00", "2026-03-09T13:00:00"),
    (CONNECTICUT, None, "08:00-21:00", "2026-03-07T13:30:00", "2026-03-07T14:00:00"),  # EST
    # Texas: Saturday 9-21, Sunday from noon, across both changes.
    (TEXAS, None, "08:00-21:00", "2026-03-07T14:30:00", "2026-03-07T15:00:00"),  # Sat 8:30 CST
    (TEXAS, None, "08:00-21:00", "2026-03-08T15:00:00", "2026-03-08T17:00:00"),  # Sun 10:00 CDT
    (TEXAS, None, "08:00-21:00", "2026-11-01T17:00:00", "2026-11-01T18:00:00"),  # Sun 11:00 CST
    (TEXAS, None, "08:00-21:00", "2026-11-02T02:30:00", "2026-11-02T02:30:00"),  # Sun 20:30 CST
    (TEXAS, None, "08:00-21:00", "2026-11-02T03:00:00", "2026-11-02T15:00:00"),  # Sun 21:00 CST
    # California: the federal 8-21 inside a window of 7-22.
    (CALIFORNIA, None, "07:00-22:00", "2026-03-10T04:30:00", "2026-03-10T15:00:00"),
    (CALIFORNIA, None, "07:00-22:00", "2026-03-09T14:30:00", "2026-03-09T15:00:00"),
    # The window is the stricter one: it decides.
    (FLORIDA, None, "mon-fri 10:00-17:00", "2026-03-07T15:00:00", "2026-03-09T14:00:00"),
    # No window of the operator's: the legal hours alone.
    (OKLAHOMA, None, None, "2026-03-10T01:30:00", "2026-03-10T13:00:00"),
    # A number relay cannot place: the window alone, in [defaults] timezone (UTC).
    (UNKNOWN, None, "08:00-21:00", "2026-03-10T21:30:00", "2026-03-11T08:00:00"),
    # Countries: Spain's weekdays 9-21, France's lunch break, Canada's weekend 10-18.
    (MADRID, None, None, "2026-03-07T10:00:00", "2026-03-09T08:00:00"),  # Sat -> Mon 9:00 CET
    (PARIS, None, None, "2026-03-09T12:30:00", "2026-03-09T13:00:00"),  # 13:30 -> 14:00 CET
    (TORONTO, None, None, "2026-03-07T23:30:00", "2026-03-08T14:00:00"),  # Sat 18:30 EST
]


@pytest.mark.parametrize(("number", "tz", "window", "now", "expected"), CASES)
def test_when_a_proactive_message_may_go(
    number: str, tz: str | None, window: str | None, now: str, expected: str
) -> None:
    config = load_config(overrides={"database.url": "sqlite://"})
    hold = policy.hold_for(parse_window(window) if window else None, number, tz, config)
    assert policy.opens(hold, utc(now)) == utc(expected)


def test_legal_hours_can_be_turned_off() -> None:
    config = load_config(overrides={"database.url": "sqlite://", "compliance.legal_hours": False})
    hold = policy.hold_for(parse_window("08:00-21:00"), FLORIDA, None, config)
    assert hold.legal == () and hold.describe() is None
    assert policy.opens(hold, utc("2026-03-10T00:30:00")) == utc("2026-03-10T00:30:00")


def test_the_rule_is_named_with_its_reason() -> None:
    config = load_config(overrides={"database.url": "sqlite://"})
    text = policy.hold_for(None, FLORIDA, None, config).describe() or ""
    assert "Florida (US-FL): mon-sun 08:00-20:00; Fla. Stat. 501.059(8)(a)" in text
    assert "United States (federal) (US): mon-sun 08:00-21:00; 47 CFR 64.1200(c)(1)" in text
    assert "the number is in US-FL; hours read in America/New_York (the number's area)" in text


def test_hours_that_never_meet_are_an_error_not_a_send() -> None:
    config = load_config(overrides={"database.url": "sqlite://"})
    hold = policy.hold_for(parse_window("21:00-23:00"), FLORIDA, None, config)
    with pytest.raises(Exception, match="never meets the legal hours of United States"):
        policy.opens(hold, utc("2026-03-10T00:30:00"))


def test_holidays_skip_the_contacts_public_holidays() -> None:
    pytest.importorskip("holidays")
    config = load_config(overrides={"database.url": "sqlite://", "compliance.holidays": True})
    hold = policy.hold_for(parse_window("09:00-17:00"), FLORIDA, None, config)
    # 4 July 2026 is a Saturday, and Friday 3 July its observed day: both are skipped.
    assert policy.opens(hold, utc("2026-07-03T14:00:00")) == utc("2026-07-05T13:00:00")
    assert policy.opens(hold, utc("2026-12-25T15:00:00")) == utc("2026-12-26T14:00:00")


def test_next_allowed_reads_every_zone_of_a_number_that_spans_several() -> None:
    coasts = (zone("America/New_York"), zone("America/Los_Angeles"))
    both = Constraint((parse_window("09:00-17:00"),), coasts)
    # 9:00 in New York is 6:00 in Los Angeles: it waits for 9:00 there (12:00 in New York).
    assert next_allowed(utc("2026-03-09T13:00:00"), [both]) == utc("2026-03-09T16:00:00")
    assert date(2026, 3, 9).weekday() == 0


def test_the_area_table_is_what_the_geocoder_says() -> None:
    """``relay/core/data/nanp_areas.txt`` is made from the installed phonenumbers
    (``python -m relay.engine.conversation.area_table``)."""
    from relay.engine.conversation import area_table

    assert area_table.main(["area_table", "--check"]) == 0


def test_a_state_from_the_table_is_the_geocoders() -> None:
    """Every prefix of +1 the geocoder describes, a number in it: the same state
    or province from the table as from the geocoder's description."""
    import phonenumbers
    from phonenumbers import geocoder
    from phonenumbers.geodata import GEOCODE_DATA

    from relay.engine.conversation.policy import answer_of, subdivision_of

    checked = 0
    for prefix in sorted(p for p in GEOCODE_DATA if p.startswith("1"))[::7]:
        number = phonenumbers.parse("+" + (prefix + "0100555")[:11])
        country = phonenumbers.region_code_for_number(number)
        if not phonenumbers.is_valid_number(number) or country not in ("US", "CA"):
            continue
        said = answer_of(geocoder.description_for_number(number, "en"))
        assert place_of(phonenumbers.format_number(number, 0)).subdivision == subdivision_of(
            country, said
        ), prefix
        checked += 1
    assert checked > 1000
