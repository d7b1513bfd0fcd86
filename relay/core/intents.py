"""What a reply means, as the optional intent classifier reads it (``[intent]``).

The labels, the question put to an OpenAI-compatible model and the reading of
its answer live here, free of any HTTP, so that they are tested without a
server; :mod:`relay.agents.intent` sends the question. The rules
(:mod:`relay.core.optout`, the channels' auto-reply detection) stay what relay
acts on; a label is a reading stored on the message, and only ``opt_out`` may
act (``[intent] opt_out``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date
from enum import StrEnum
from typing import Any


class Label(StrEnum):
    OPT_OUT = "opt_out"
    OUT_OF_OFFICE = "out_of_office"
    WRONG_PERSON = "wrong_person"
    NOT_NOW = "not_now"
    INTERESTED = "interested"
    REFERRAL = "referral"
    OTHER = "other"

    def __str__(self) -> str:
        return self.value


LABELS: tuple[str, ...] = tuple(label.value for label in Label)
#: The labels whose date (when the contact is back, when to ask again) is kept.
DATED = frozenset({Label.NOT_NOW, Label.OUT_OF_OFFICE})
#: The most of a reply sent to the model: the new text is what counts, and a
#: whole quoted thread would only cost tokens.
MAX_TEXT = 4000


@dataclass(frozen=True)
class Intent:
    """A reply's label and, for ``not_now`` and ``out_of_office``, the date it names."""

    label: Label
    day: date | None = None


#: A reply the rules already read as an opt-out: labelled so without asking.
RULES_OPT_OUT = Intent(Label.OPT_OUT)

_GUIDE = """\
You label one reply that a contact sent to an outreach message. Answer with one JSON \
object and nothing else: {{"label": LABEL, "date": DATE}}.
LABEL is one of:
- "opt_out": they ask not to be contacted any more, in any words or language;
- "out_of_office": an automatic away, vacation or out-of-office message;
- "wrong_person": the message reached the wrong person or they are not the one to ask;
- "not_now": not now, but maybe later, or contact me again at a later time;
- "interested": they want to go ahead, agree, or ask for more;
- "referral": they point to someone else to contact instead;
- "other": anything else.
DATE is the date the reply names for "not_now" (when to ask again) or "out_of_office" \
(when they are back), as YYYY-MM-DD, reading relative dates from today, {today}; \
otherwise null."""


def question(text: str, today: date) -> list[dict[str, str]]:
    """The chat messages that ask for ``text``'s label (the reply as the user's turn)."""
    return [
        {"role": "system", "content": _GUIDE.format(today=today.isoformat())},
        {"role": "user", "content": text[:MAX_TEXT]},
    ]


_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


def read_answer(content: Any) -> Intent | None:
    """The model's answer as an :class:`Intent`, or None when it is no answer (not
    JSON, no known label): then the rules decide alone. A bare label is taken; a
    date that is not ``YYYY-MM-DD`` is dropped, the label kept."""
    if not isinstance(content, str):
        return None
    text = _FENCE.sub("", content.strip()).strip()
    if text.strip("\"'. ").lower() in LABELS:
        return Intent(Label(text.strip("\"'. ").lower()))
    try:
        data = json.loads(text)
    except ValueError:
        return None
    raw = data.get("label") if isinstance(data, dict) else None
    if not isinstance(raw, str) or raw.strip().lower() not in LABELS:
        return None
    label = Label(raw.strip().lower())
    return Intent(label, _date(data.get("date")) if label in DATED else None)


def _date(value: Any) -> date | None:
    if not isinstance(value, str):
        return None
    try:
        return date.fromisoformat(value.strip()[:10])
    except ValueError:
        return None
