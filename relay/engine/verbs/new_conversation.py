"""A new conversation, checked and normalised before anything is written.

:func:`relay.engine.verbs.starting.prepare` builds one for ``relay start``;
``relay import`` builds many and writes them in bulk (:mod:`relay.engine.verbs.bulk`),
so the checks and the todo columns live here, once, for both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from relay.core.errors import InvalidInput

if TYPE_CHECKING:
    from relay.store.models import Contact

MAX_TEXT = 10_000
MAX_FOLLOWUPS = 1000
MAX_CAMPAIGN = 128


@dataclass(frozen=True)
class NewConversation:
    """A conversation to create, checked and normalised (:func:`.starting.prepare`)."""

    address: str
    objective: str
    todos: tuple[str, ...]
    subject: str | None
    heartbeat: timedelta
    max_followups: int
    channel: str
    agent: str
    window: str | None = None
    campaign: str | None = None
    #: One row of one import (``relay import``): unique, so a re-run starts nothing twice.
    import_key: str | None = None
    #: Fields to merge into the contact's (an import's columns).
    contact_fields: dict[str, Any] | None = None
    timezone: str | None = None
    #: What kind of answer each todo wants, in todo order (default: free text).
    answers: tuple[Any, ...] = ()
    meta: dict[str, Any] | None = None
    result_schema: dict[str, Any] | None = None
    #: The conversation's own WhatsApp template (:func:`relay.core.templates.content_template`).
    template: dict[str, Any] | None = None
    #: Which of the agent's messages a person approves first (None: none).
    approval: str | None = None
    #: The channels asked for, in order (``--channel whatsapp,sms,email``; one: no
    #: ladder); ``channel`` is the first until :func:`relay.engine.verbs.ladders.settle`
    #: picks the rung to start on.
    channels: tuple[str, ...] = ()
    #: The settled ladder (:func:`relay.core.ladder.to_json`); None: one channel, the
    #: contact's own address (as before ladders).
    ladder: list[Any] | None = None
    fallback_seconds: int | None = None
    #: The contact's other addresses to record (an import's email/phone/telegram
    #: columns): ``(kind, address)``, normalised.
    addresses: tuple[tuple[str, str], ...] = ()
    #: Where and when the contact consented (``--consent``, a ``consent`` column).
    consent: str | None = None


def answer_columns(spec: NewConversation, position: int) -> dict[str, Any]:
    """The todo's answer kind, choices and whether it is required (the same keys
    for every todo, so a bulk insert can write many rows in one statement)."""
    if position > len(spec.answers):
        return {"answer_kind": "text", "answer_spec": None, "required": 1}
    answer = spec.answers[position - 1]
    return {
        "answer_kind": answer.kind.value,
        "answer_spec": {"choices": list(answer.choices)} if answer.choices else None,
        "required": int(answer.required),
    }


def clean_text(text: str, what: str) -> str:
    # NUL never means anything in a message, and PostgreSQL text cannot hold it:
    # a channel that hands one over must not fail the whole pulse.
    cleaned = (text or "").replace("\x00", "").strip()
    if not cleaned:
        raise InvalidInput(f"{what} must not be empty")
    if len(cleaned) > MAX_TEXT:
        raise InvalidInput(f"{what} is longer than {MAX_TEXT} characters")
    return cleaned


#: The options :func:`refuse_empty` checks, in the order it takes them.
REFUSED_EMPTY = (
    "heartbeat", "channel", "agent", "window", "subject", "approval", "whatsapp-template"
)  # fmt: skip


def refuse_empty(*given: object) -> None:
    """An option given empty (``--heartbeat ""``, ``--window " "``) is refused, not
    taken as its default; ``given`` in the order of :data:`REFUSED_EMPTY`."""
    for option, value in zip(REFUSED_EMPTY, given, strict=False):
        if isinstance(value, str) and not value.strip():
            raise InvalidInput(f"--{option} is empty: give a value or leave the option out")


def checked_result_schema(schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if schema is None:
        return None
    from relay.engine.verbs.program import check_schema

    return check_schema(dict(schema))


def clean_campaign(name: str | None) -> str | None:
    """A campaign tag: trimmed, not empty, at most 128 characters."""
    if name is None:
        return None
    cleaned = name.replace("\x00", "").strip()
    if not cleaned or len(cleaned) > MAX_CAMPAIGN:
        raise InvalidInput(f"--campaign must be 1 to {MAX_CAMPAIGN} characters")
    return cleaned


def clean_consent(text: str | None) -> str | None:
    """A consent record as given, trimmed; empty is refused (it would read as none)."""
    if text is None:
        return None
    cleaned = " ".join(text.replace("\x00", "").split())
    if not cleaned:
        raise InvalidInput("--consent is empty: say where and when, as in 'web form 2026-03-01'")
    if len(cleaned) > 500:
        raise InvalidInput("--consent is longer than 500 characters")
    return cleaned


def check_timezone(name: str) -> None:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidInput(
            f"unknown time zone {name!r} (use an IANA name like Europe/Madrid)"
        ) from None


def merge_contact_fields(person: Contact, spec: NewConversation, now: datetime) -> None:
    """What a new conversation tells about its contact (an import's columns, a
    time zone) goes onto the contact, for this and later conversations."""
    if spec.contact_fields:
        person.fields = {**(person.fields or {}), **spec.contact_fields}
        person.updated_at = now
    if spec.timezone:
        person.timezone = spec.timezone
        person.updated_at = now
    if spec.consent and spec.consent != person.consent:
        person.consent = spec.consent
        person.consent_at = now
        person.updated_at = now
