"""Recognising opt-out and opt-in messages (carrier keywords, also in short sentences)."""

from __future__ import annotations

import re
from collections.abc import Iterable

OPT_OUT_WORDS = ("STOP", "STOPALL", "UNSUBSCRIBE", "END", "QUIT", "CANCEL", "REVOKE", "OPTOUT")
OPT_IN_WORDS = ("START", "UNSTOP")

# A keyword counts inside a short message ("Stop. Thank you") but not in a long
# one ("I can't stop thinking about your offer, tell me more ..."), where the
# word is part of the conversation rather than a command.
_MAX_WORDS = 6
_WORD = re.compile(r"[A-Za-z]+")


def _matches(text: str, keywords: Iterable[str]) -> bool:
    words = [w.upper() for w in _WORD.findall(text)]
    if not words or len(words) > _MAX_WORDS:
        return False
    wanted = {k.upper() for k in keywords}
    if words[0] in wanted:
        return True
    return len(words) <= 3 and any(w in wanted for w in words)


def is_opt_out(text: str, keywords: Iterable[str] = OPT_OUT_WORDS) -> bool:
    return _matches(text, keywords)


def is_opt_in(text: str, keywords: Iterable[str] = OPT_IN_WORDS) -> bool:
    return _matches(text, keywords)
