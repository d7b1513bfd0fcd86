"""The table of North American number prefixes to their state or province
(``relay/core/data/nanp_areas.txt``), made from the phonenumbers library's geocoder.

:func:`relay.engine.conversation.policy.place_of` reads a US or Canadian number's
state from this table rather than from the geocoder: the geocoder's import loads
its description of every prefix of the world in every language (about 0.3 s of CPU
and 100 MB of memory in a daemon, for two letters). The table keeps, from the
geocoder's English descriptions of the prefixes of +1, what ``place_of`` made of
them (:func:`relay.engine.conversation.policy.answer_of`), and only the
prefixes whose answer differs from that of the next shorter prefix: the longest
match in the table answers as the longest match in the geocoder did.

    python -m relay.engine.conversation.area_table > relay/core/data/nanp_areas.txt
    python -m relay.engine.conversation.area_table --check

One line per area code: ``1NPA<TAB>answer for the area code<TAB>answer:suffix
suffix ...;answer:...``, an answer being a subdivision (``FL``), a place of the
rules table for one country only (``US-FL``) or empty (none).
"""

from __future__ import annotations

import sys
from collections import defaultdict
from importlib import resources


def generated() -> str:
    """The table as the installed phonenumbers library describes the prefixes."""
    from phonenumbers.geodata import GEOCODE_DATA

    from relay.engine.conversation.policy import answer_of

    full = {
        prefix: answer_of(names["en"])
        for prefix, names in GEOCODE_DATA.items()
        if prefix.startswith("1") and "en" in names
    }
    kept: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    areas: dict[str, str] = {}
    for prefix in sorted(full, key=lambda p: (len(p), p)):
        shorter = next((full[prefix[:n]] for n in range(len(prefix) - 1, 0, -1)
                        if prefix[:n] in full), "")  # fmt: skip
        if len(prefix) == 4:
            areas[prefix] = full[prefix]
        elif full[prefix] != shorter:
            kept[prefix[:4]][full[prefix]].append(prefix[4:])
    lines = []
    for area in sorted(set(areas) | set(kept)):
        rest = ";".join(f"{answer}:{' '.join(s)}" for answer, s in sorted(kept[area].items()))
        lines.append(f"{area}\t{areas.get(area, '')}\t{rest}")
    return "\n".join(lines) + "\n"


def stored() -> str:
    return resources.files("relay.core").joinpath("data", "nanp_areas.txt").read_text()


def main(argv: list[str]) -> int:
    if argv[1:] == ["--check"]:
        if stored() != generated():
            print("relay/core/data/nanp_areas.txt is out of date: regenerate it", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(generated())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
