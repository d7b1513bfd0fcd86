"""Recognising opt-out and opt-in messages (carrier keywords, also in short sentences)."""

from __future__ import annotations

import re
from collections.abc import Iterable

OPT_OUT_WORDS = ("STOP", "STOPALL", "UNSUBSCRIBE", "END", "QUIT", "CANCEL", "REVOKE", "OPTOUT")
OPT_IN_WORDS = ("START", "UNSTOP")

# A keyword counts when it stands as a clause of its own, alone or with
# politeness and object words around it ("Stop. Thank you", "please stop",
# "UNSUBSCRIBE me", "stop texting me"), but not when it is part of a sentence
# about something else ("End of May works", "Cancel the delivery", "I can't
# stop thinking about your offer"): there the word belongs to the conversation.
_CLAUSES = re.compile(r"[.!?;,:\n]+")
_WORD = re.compile(r"[A-Za-z]+")
_FILLER = frozenset(
    {
        "PLEASE",
        "PLS",
        "PLZ",
        "NOW",
        "ME",
        "IT",
        "ALL",
        "THANKS",
        "THANK",
        "YOU",
        "OK",
        "OKAY",
        "TEXTING",
        "MESSAGING",
        "CONTACTING",
        "EMAILING",
        "CALLING",
        "TEXTS",
        "MESSAGES",
        "EMAILS",
    }
)


def _matches(text: str, keywords: Iterable[str]) -> bool:
    wanted = {k.upper() for k in keywords}
    for clause in _CLAUSES.split(text):
        words = [w.upper() for w in _WORD.findall(clause)]
        if any(w in wanted for w in words) and all(w in wanted or w in _FILLER for w in words):
            return True
    return False


def is_opt_out(text: str, keywords: Iterable[str] = OPT_OUT_WORDS) -> bool:
    return _matches(text, keywords)


def is_opt_in(text: str, keywords: Iterable[str] = OPT_IN_WORDS) -> bool:
    return _matches(text, keywords)
