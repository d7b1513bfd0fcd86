"""A time zone's country (relay.core.zone_regions): how relay knows a contact's day/month order."""

from __future__ import annotations

import pytest

from relay.core.zone_regions import region_of_zone


@pytest.mark.parametrize(
    ("zone", "region"),
    [("America/New_York", "US"), ("America/Chicago", "US"), ("US/Pacific", "US"),
     ("Europe/London", "GB"), ("Europe/Madrid", "ES"), ("Asia/Manila", "PH"),
     ("UTC", None), ("", None), (None, None), ("Nowhere/Atlantis", None)],
)
def test_a_zone_names_its_country(zone: str | None, region: str | None) -> None:
    assert region_of_zone(zone) == region
