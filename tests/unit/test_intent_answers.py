"""Reading the intent classifier's answer (relay.core.intents): what is a label,
what is garbage (the rules then decide alone)."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from relay.core.intents import LABELS, MAX_TEXT, Intent, Label, question, read_answer


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"label": "interested", "date": null}', Intent(Label.INTERESTED)),
        ('{"label": "not_now", "date": "2026-12-01"}', Intent(Label.NOT_NOW, date(2026, 12, 1))),
        (
            '{"label": "out_of_office", "date": "2026-07-31T00:00"}',
            Intent(Label.OUT_OF_OFFICE, date(2026, 7, 31)),
        ),
        ('```json\n{"label": "referral"}\n```', Intent(Label.REFERRAL)),
        ('{"label": " Wrong_Person ", "date": "2026-01-01"}', Intent(Label.WRONG_PERSON)),
        ('{"label": "not_now", "date": "next week"}', Intent(Label.NOT_NOW)),
        ("opt_out", Intent(Label.OPT_OUT)),
        ('"other".', Intent(Label.OTHER)),
    ],
)
def test_answers_that_are_labels(content: str, expected: Intent) -> None:
    assert read_answer(content) == expected


@pytest.mark.parametrize(
    "content",
    [None, 42, "", "They seem keen!", '{"label": "enthusiastic"}', '{"mood": "interested"}',
     '["interested"]', '{"label": 3}', "{not json"],
)  # fmt: skip
def test_answers_that_are_not(content: Any) -> None:
    assert read_answer(content) is None


def test_the_question_names_every_label_and_today() -> None:
    system, user = question("x" * (MAX_TEXT + 10), date(2026, 11, 26))
    assert all(f'"{label}"' in system["content"] for label in LABELS)
    assert "2026-11-26" in system["content"]
    assert user == {"role": "user", "content": "x" * MAX_TEXT}
