"""What literal text a regular expression cannot match without.

Python's ``re`` tries every alternative of a large alternation at every position
of the text: the opt-out wordings (:mod:`relay.core.optout_phrases`, about a
hundred patterns in one) cost 30-40 µs a sentence that holds none of them,
which is most sentences people send. Every match of each wording contains one
of a few literal strings ("abmelden", "contact", "la paix"); a sentence with
none of them is skipped after one cheap search (:func:`gate`). The strings are
worked out from the patterns themselves, so the gate follows the wordings as
they change, and it is conservative: where it cannot tell, it lets the text
through (``None``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

try:  # the parser re compiles with (Python 3.11: re._parser)
    from re import _constants as _c  # type: ignore[attr-defined]
    from re import _parser as _sre  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - older or other Pythons: no gate
    _sre = _c = None


def needs(pattern: str) -> set[str] | None:
    """Strings one of which every match of ``pattern`` contains (None: unknown)."""
    if _sre is None:
        return None
    try:
        parsed = _sre.parse(pattern)
    except (re.error, AttributeError):
        return None
    if parsed.state.flags & (re.IGNORECASE | re.VERBOSE):
        return None  # a literal could match in another case: not a substring test
    return _needs(parsed)


def gate(patterns: Iterable[str], shortest: int = 3) -> re.Pattern[str] | None:
    """One search that finds something in every text one of ``patterns`` matches
    (a text it finds nothing in is matched by none), or None when some pattern
    needs no literal of at least ``shortest`` characters."""
    found: set[str] = set()
    for pattern in patterns:
        strings = needs(pattern)
        if not strings or min(map(len, strings)) < shortest:
            return None
        found |= strings
    # A string that contains another is found wherever the other is.
    kept = sorted(s for s in found if not any(o != s and o in s for o in found))
    return re.compile("|".join(map(re.escape, kept)))


def _needs(items: Any) -> set[str] | None:
    """The requirement of a parsed sequence: the best of its mandatory parts'."""
    best: set[str] | None = None
    run: list[str] = []

    def consider(strings: set[str] | None) -> None:
        nonlocal best
        if strings and (best is None or _better(strings, best)):
            best = strings

    for op, av in items:
        char = _char(op, av)
        if char is not None:
            run.append(char)
        elif op not in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):  # zero width: one run across
            consider({"".join(run)} if run else None)
            run.clear()
            consider(_part(op, av))
    consider({"".join(run)} if run else None)
    return best


def _char(op: Any, av: Any) -> str | None:
    """The one character a literal (or a class of one literal) matches."""
    if op is _c.LITERAL:
        return chr(av)
    if op is _c.IN and len(av) == 1 and av[0][0] is _c.LITERAL:
        return chr(av[0][1])
    return None


def _part(op: Any, av: Any) -> set[str] | None:
    if op is _c.SUBPATTERN:
        _group, add_flags, _del_flags, sub = av
        return None if add_flags & re.IGNORECASE else _needs(sub)
    if op is _c.BRANCH:
        branches = [_needs(branch) for branch in av[1]]
        if any(not b for b in branches):
            return None
        return set().union(*branches)  # type: ignore[arg-type]
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", None)):
        low, _high, item = av
        return _needs(item) if low >= 1 else None
    return None  # a class, any character, a back reference: nothing literal


def _better(strings: set[str], than: set[str]) -> bool:
    """Longer shortest string first (rarer in text), then fewer strings."""
    ours, theirs = min(map(len, strings)), min(map(len, than))
    return ours > theirs or (ours == theirs and len(strings) < len(than))
