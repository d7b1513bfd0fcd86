"""The literal strings a pattern cannot match without (relay.core.regex_gate), and
the opt-out reading that skips its wordings where none is found: the same
decisions as without the gate."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from relay.core import optout
from relay.core.regex_gate import gate, needs

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.mark.parametrize(
    ("pattern", "strings"),
    [
        (r"\bstop\s+texting\b", {"texting"}),  # the longest run of literals
        (r"\b(?:lose|forget)\s+my\s+number\b", {"number"}),
        (r"\b(?:retir|supprim)(?:ez|er)[-\s]?moi\b", {"retir", "supprim"}),
        (r"(?:ne\s+)?plus\s+de\s+sms", {"plus"}),  # an optional part needs nothing
        (r"\bdon'?t\s+call", {"call"}),
        (r"\b(?:a|bb)\w+", {"a", "bb"}),
        (r"(?:abc)+x", {"abc"}),
        (r"(?:abc)*x", {"x"}),
    ],
)
def test_what_every_match_contains(pattern: str, strings: set[str]) -> None:
    assert needs(pattern) == strings


@pytest.mark.parametrize(
    ("pattern", "strings"),
    [
        (r"(?i)stop", None),  # "STOP" matches too: no substring test
        (r"(?i:stop)\s+me", {"me"}),  # the case-blind group needs nothing; "me" is too short
        (r"\w+", None),
        (r"(?:stop|\d+)", None),  # one branch needs no literal
    ],
)
def test_no_gate_where_it_cannot_tell(pattern: str, strings: set[str] | None) -> None:
    assert needs(pattern) == strings
    assert gate([pattern]) is None


def test_a_gate_finds_something_in_every_text_a_pattern_matches() -> None:
    patterns = [r"\b(?:stop|quit)\s+(?:texting|calling)\b", r"\bleave\s+me\s+alone\b"]
    found = gate(patterns)
    assert found is not None
    for text in ["please stop texting", "quit calling me", "leave me alone", "stop by later"]:
        if any(re.search(p, text) for p in patterns):
            assert found.search(text)
    assert not found.search("see you on thursday")


def _texts() -> list[str]:
    texts = []
    for path in sorted((DATA / "optout").glob("*.tsv")):
        with path.open(newline="", encoding="utf-8") as handle:
            texts += [row["text"] for row in csv.DictReader(handle, delimiter="\t")]
    ham = (DATA / "sms" / "ham.txt").read_text(encoding="utf-8").splitlines()
    return texts + ham[:1500]


def test_the_opt_out_reading_decides_the_same_with_its_gates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    texts = _texts()
    assert all(gate_ is not None for gate_ in optout._gates())  # the wordings are gated
    gated = [optout.is_opt_out_by_rules(text) for text in texts]
    monkeypatch.setattr(optout, "_gates", lambda: (None, None))
    assert [optout.is_opt_out_by_rules(text) for text in texts] == gated
