"""Structured answers: what kind of answer a todo wants, and checking one.

A todo is written ``TEXT::KIND`` on the command line (``"Which day suits
you?::date"``, ``"Pick one::choice(mon,tue,wed)"``, ``"Anything else?::text?"``;
a trailing ``?`` makes the todo optional). Without ``::KIND`` a todo wants free
text and is required, as before. :func:`check_answer` turns what an agent
recorded into the stored (normalised) value, or raises :class:`InvalidInput`
with a message the agent can act on. :func:`extract_answer` is the lenient
reading the scripted agent uses on a contact's words.

Pure and stdlib only, like the rest of :mod:`relay.core`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from enum import StrEnum
from functools import lru_cache
from typing import Any

from relay.core.errors import InvalidInput


class AnswerKind(StrEnum):
    TEXT = "text"
    CHOICE = "choice"
    DATE = "date"
    TIME = "time"
    DATETIME = "datetime"
    NUMBER = "number"
    YESNO = "yesno"
    EMAIL = "email"
    PHONE = "phone"

    def __str__(self) -> str:
        return self.value


#: How each kind is described to an agent (and in errors).
HINTS: dict[AnswerKind, str] = {
    AnswerKind.TEXT: "non-empty text",
    AnswerKind.CHOICE: "one of the choices",
    AnswerKind.DATE: "a date as YYYY-MM-DD",
    AnswerKind.TIME: "a time as HH:MM (24-hour)",
    AnswerKind.DATETIME: "a date and time as YYYY-MM-DDTHH:MM (ISO 8601)",
    AnswerKind.NUMBER: "a number",
    AnswerKind.YESNO: "true or false (yes or no)",
    AnswerKind.EMAIL: "an email address",
    AnswerKind.PHONE: "a phone number (7 to 15 digits, optional leading +)",
}

_SPEC = re.compile(r"^\s*([a-z]+)\s*(?:\((.*)\))?\s*(\?)?\s*$", re.DOTALL)
_EMAIL = re.compile(r"[^@\s<>(),;:]+@[^@\s<>(),;:]+\.[A-Za-z]{2,}")
_PHONE_CHARS = re.compile(r"[\s().\-/]")
_PHONE = re.compile(r"^\+?\d{7,15}$")
_YES = frozenset({"yes", "y", "yeah", "yep", "true", "correct", "right", "sure", "ok", "okay"})
_NO = frozenset({"no", "n", "nope", "false", "wrong", "incorrect", "not"})
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


@dataclass(frozen=True)
class AnswerSpec:
    """The answer a todo wants: its kind, the choices of a ``choice``, and
    whether a completed conversation must have it."""

    kind: AnswerKind = AnswerKind.TEXT
    choices: tuple[str, ...] = ()
    required: bool = True

    def describe(self) -> str:
        if self.kind is AnswerKind.CHOICE:
            return "one of: " + ", ".join(self.choices)
        return HINTS[self.kind]

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind.value, "required": self.required}
        if self.choices:
            data["choices"] = list(self.choices)
        return data

    def text(self) -> str:
        """The ``KIND`` syntax this spec is written as (round-trips :func:`parse_spec`)."""
        body = self.kind.value
        if self.choices:
            body += "(" + ",".join(self.choices) + ")"
        return body + ("" if self.required else "?")

    @classmethod
    def from_json(cls, kind: str | None, spec: dict[str, Any] | None, required: bool) -> AnswerSpec:
        choices = tuple(str(c) for c in (spec or {}).get("choices", ()))
        return spec_of(kind or "text", choices, bool(required))


TEXT = AnswerSpec()


@lru_cache(maxsize=1024)
def spec_of(kind: str, choices: tuple[str, ...], required: bool) -> AnswerSpec:
    """The one (immutable) spec of these: a turn asks for its todos' specs at every
    check of its actions, and a campaign's todos share a handful."""
    return AnswerSpec(AnswerKind(kind), choices, required)


def parse_spec(text: str) -> AnswerSpec:
    """``date``, ``choice(a,b,c)``, ``yesno?`` ... -> an :class:`AnswerSpec`."""
    match = _SPEC.match(text)
    kinds = ", ".join(k.value for k in AnswerKind)
    if match is None:
        raise InvalidInput(f"invalid answer kind {text!r} (kinds: {kinds}; e.g. choice(a,b))")
    name, options, optional = match.groups()
    try:
        kind = AnswerKind(name)
    except ValueError:
        raise InvalidInput(f"unknown answer kind {name!r} (kinds: {kinds})") from None
    choices: tuple[str, ...] = ()
    if kind is AnswerKind.CHOICE:
        choices = tuple(c.strip() for c in re.split(r"[,|]", options or "") if c.strip())
        if len(choices) < 2:
            raise InvalidInput("choice(...) needs at least two choices, e.g. choice(mon,tue)")
    elif options:
        raise InvalidInput(f"answer kind {name!r} takes no options")
    return AnswerSpec(kind, choices, required=optional is None)


def parse_todo(text: str) -> tuple[str, AnswerSpec]:
    """Split ``"Which day suits you?::date"`` into the question and its spec.

    The last ``::`` separates them; text without one wants required free text.
    """
    question, sep, spec = text.rpartition("::")
    if not sep:
        return text, TEXT
    if not question.strip():
        raise InvalidInput(f"todo {text!r} has an answer kind but no text")
    return question.strip(), parse_spec(spec)


def check_answer(spec: AnswerSpec, value: Any) -> Any:
    """The stored form of ``value`` for ``spec``, or InvalidInput saying what is wanted."""
    checker = _CHECKERS[spec.kind]
    try:
        return checker(spec, value)
    except (TypeError, ValueError):
        raise InvalidInput(f"answer {_short(value)} is not {spec.describe()}") from None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _as_text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise ValueError("not text")
    return value.strip()


def _text(spec: AnswerSpec, value: Any) -> str:
    return _as_text(value)


def _choice(spec: AnswerSpec, value: Any) -> str:
    wanted = _as_text(value).casefold()
    for choice in spec.choices:
        if choice.casefold() == wanted:
            return choice
    raise ValueError("not a choice")


def _date(spec: AnswerSpec, value: Any) -> str:
    return date.fromisoformat(_as_text(value)).isoformat()


def _time(spec: AnswerSpec, value: Any) -> str:
    return time.fromisoformat(_as_text(value)).isoformat(timespec="minutes")


def _datetime(spec: AnswerSpec, value: Any) -> str:
    text = _as_text(value)
    if "T" not in text and " " not in text:
        raise ValueError("a date alone")
    return datetime.fromisoformat(text.replace("Z", "+00:00")).isoformat()


def _number(spec: AnswerSpec, value: Any) -> int | float:
    if isinstance(value, bool):
        raise ValueError("a boolean")
    number = value if isinstance(value, int | float) else float(_as_text(value))
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError("not finite")
    return int(number) if float(number).is_integer() else float(number)


def _yesno(spec: AnswerSpec, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    word = _as_text(value).casefold()
    if word in _YES:
        return True
    if word in _NO:
        return False
    raise ValueError("not yes or no")


def _email(spec: AnswerSpec, value: Any) -> str:
    text = _as_text(value)
    if not _EMAIL.fullmatch(text):
        raise ValueError("not an email")
    local, _, domain = text.rpartition("@")
    return f"{local}@{domain.lower()}"


def _phone(spec: AnswerSpec, value: Any) -> str:
    text = _PHONE_CHARS.sub("", _as_text(value))
    if not _PHONE.match(text):
        raise ValueError("not a phone number")
    return text


_CHECKERS = {
    AnswerKind.TEXT: _text,
    AnswerKind.CHOICE: _choice,
    AnswerKind.DATE: _date,
    AnswerKind.TIME: _time,
    AnswerKind.DATETIME: _datetime,
    AnswerKind.NUMBER: _number,
    AnswerKind.YESNO: _yesno,
    AnswerKind.EMAIL: _email,
    AnswerKind.PHONE: _phone,
}


# -- lenient reading of a contact's words (the scripted agent) -----------------------------


def extract_answer(spec: AnswerSpec, text: str, today: date | None = None) -> Any:
    """Find an answer of ``spec``'s kind in free text ("Thursday works" -> the next
    Thursday's date), or return the text itself for the check to refuse."""
    finder = _FINDERS.get(spec.kind)
    found = finder(spec, text, today) if finder else None
    return text.strip() if found is None else found


def _words(text: str) -> list[str]:
    return re.findall(r"[\w'+-]+", text.casefold())


def _find_yesno(spec: AnswerSpec, text: str, today: date | None) -> bool | None:
    for word in _words(text):
        if word in _YES:
            return True
        if word in _NO:
            return False
    return None


def _find_choice(spec: AnswerSpec, text: str, today: date | None) -> str | None:
    lowered = text.casefold()
    hits = [c for c in spec.choices if re.search(rf"\b{re.escape(c.casefold())}\b", lowered)]
    return hits[0] if len(hits) == 1 else None


def _find_date(spec: AnswerSpec, text: str, today: date | None) -> str | None:
    iso = re.search(r"\b\d{4}-\d{2}-\d{2}\b", text)
    if iso:
        return iso.group()
    if today is None:
        return None
    for word in _words(text):
        if word in ("today", "tomorrow"):
            return (today + timedelta(days=word == "tomorrow")).isoformat()
        if word in _WEEKDAYS:
            ahead = (_WEEKDAYS.index(word) - today.weekday()) % 7 or 7
            return (today + timedelta(days=ahead)).isoformat()
    return None


def _find_number(spec: AnswerSpec, text: str, today: date | None) -> int | float | None:
    match = re.search(r"-?\d+(?:\.\d+)?", text)
    return None if match is None else _number(spec, match.group())


def _find_time(spec: AnswerSpec, text: str, today: date | None) -> str | None:
    match = re.search(r"\b([01]?\d|2[0-3])[:h.]([0-5]\d)\b", text)
    return None if match is None else f"{int(match.group(1)):02d}:{match.group(2)}"


def _find_email(spec: AnswerSpec, text: str, today: date | None) -> str | None:
    match = _EMAIL.search(text)
    return None if match is None else match.group()


def _find_phone(spec: AnswerSpec, text: str, today: date | None) -> str | None:
    match = re.search(r"\+?\d[\d\s().\-/]{5,}\d", text)
    return None if match is None else match.group()


_FINDERS = {
    AnswerKind.YESNO: _find_yesno,
    AnswerKind.CHOICE: _find_choice,
    AnswerKind.DATE: _find_date,
    AnswerKind.NUMBER: _find_number,
    AnswerKind.TIME: _find_time,
    AnswerKind.EMAIL: _find_email,
    AnswerKind.PHONE: _find_phone,
}
