"""Which of the agent's messages a person approves before they go out.

``none``: none (relay's behaviour before drafts); ``first``: the opening message
(every message until a person has approved one); ``all``: every message the
agent writes (first, replies, follow-ups).
An operator's own message (``relay send``) is never a draft: the operator is the
person who would approve it.
"""

from __future__ import annotations

from relay.core.errors import InvalidInput

MODES = ("none", "first", "all")


def parse_mode(text: str | None) -> str | None:
    """The mode as stored: None for ``none`` (or nothing given), else the mode."""
    if text is None:
        return None
    mode = text.strip().lower()
    if mode not in MODES:
        raise InvalidInput(f"unknown approval {text!r} (one of: {', '.join(MODES)})")
    return None if mode == "none" else mode


def needs_approval(mode: str | None) -> bool:
    """Whether the agent's messages wait as drafts now. ``first`` holds until a
    person has approved one message of the conversation (a rejected opening
    message is written again, and waits again); :func:`after_approval` then
    clears it."""
    return mode in ("first", "all")


def after_approval(mode: str | None) -> str | None:
    """The conversation's mode once a person has approved one of its drafts."""
    return None if mode == "first" else mode
