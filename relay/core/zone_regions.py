"""The country of an IANA time zone (``America/Chicago`` -> ``US``), from the tz database.

A contact's time zone is often all relay knows of where they live, and where
they live says how they write a numeric date (``4/5`` is April 5 in the US,
4 May elsewhere). The tz database's ``zone.tab`` maps each zone to its
country; it ships with the ``tzdata`` package and with the system's zoneinfo.
Standard library only.
"""

from __future__ import annotations

import contextlib
import zoneinfo
from functools import cache
from importlib import resources
from pathlib import Path

#: Old link names that zone.tab does not list.
_PREFIXES = {
    "US/": "US",
    "Canada/": "CA",
    "Brazil/": "BR",
    "Mexico/": "MX",
    "Chile/": "CL",
    "Australia/": "AU",
}


def region_of_zone(zone: str | None) -> str | None:
    """The ISO country code of time zone ``zone``, or None (``UTC``, unknown, empty)."""
    if not zone:
        return None
    for prefix, region in _PREFIXES.items():
        if zone.startswith(prefix):
            return region
    return _zones().get(zone)


@cache
def _zones() -> dict[str, str]:
    for text in _zone_tables():
        found = {}
        for line in text.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            columns = line.split("\t")
            if len(columns) >= 3:
                found[columns[2].strip()] = columns[0].strip()
        if found:
            return found
    return {}


def _zone_tables() -> list[str]:
    tables = []
    with contextlib.suppress(ModuleNotFoundError, OSError):
        tables.append(resources.files("tzdata").joinpath("zoneinfo", "zone.tab").read_text())
    for folder in zoneinfo.TZPATH:
        path = Path(folder) / "zone.tab"
        if path.is_file():
            tables.append(path.read_text())
    return tables
