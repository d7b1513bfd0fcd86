"""A conversation's subject line, from ``--subject`` or from its objective.

Email shows the subject in every message of the thread, so it should read
like one a person would write: the objective's first sentence, tidied.
"""

from __future__ import annotations

import re

MAX_SUBJECT = 60
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def subject_from_objective(objective: str) -> str | None:
    """The default subject: the objective's first line and first sentence,
    whitespace collapsed, trailing ``.``/``:``/``;`` removed, first letter in
    capitals, cut at a word boundary with ``…`` past 60 characters.

    ``"confirm the delivery date of order 1042. Be polite."`` gives
    ``"Confirm the delivery date of order 1042"``. None for an empty objective.
    """
    first_line = next((line for line in objective.splitlines() if line.strip()), "")
    sentence = _SENTENCE_END.split(first_line.strip(), maxsplit=1)[0]
    text = " ".join(sentence.split()).rstrip(".:;, ")
    if not text:
        return None
    text = text[0].upper() + text[1:]
    if len(text) <= MAX_SUBJECT:
        return text
    cut = text[: MAX_SUBJECT - 1]
    if " " in cut:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(".:;, ") + "…"


def clean_subject(subject: str) -> str:
    """A subject given by the operator, on one line (a line break would break the header)."""
    return " ".join(subject.split())
