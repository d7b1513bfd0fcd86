"""Recognising opt-out and opt-in messages (carrier keywords, also in short sentences).

Text is NFKC-normalised first (full-width letters are plain ``STOP``) and "opt
out" written apart or hyphenated is the keyword ``OPTOUT``. Then either rule
recognises an opt-out:

* a keyword that stands as a clause of its own, alone or with politeness and
  object words around it ("Stop. Thank you", "please stop", "UNSUBSCRIBE me",
  "stop texting me"), but not one that is part of a sentence about something
  else ("End of May works", "Cancel the delivery", "I can't stop thinking
  about your offer"): there the word belongs to the conversation;
* a clause that is one of the common ways of saying it ("I want to
  unsubscribe", "stop sending me messages", "remove me from your list", "do
  not contact me again", "don't text me anymore"), again only as the whole
  clause, so "please don't stop the delivery" is not one.

A miss costs a contact an unwanted message (and an agent can still record
the opt-out with its ``opt_out`` action); a false match ends a conversation
the contact wanted, so both rules stay narrow.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

OPT_OUT_WORDS = ("STOP", "STOPALL", "UNSUBSCRIBE", "END", "QUIT", "CANCEL", "REVOKE", "OPTOUT")
OPT_IN_WORDS = ("START", "UNSTOP")

_CLAUSES = re.compile(r"[.!?;,:\n]+")
_WORD = re.compile(r"[A-Za-z]+")
_JOINED = re.compile(r"\b(opt|un)[\s_-]+(out|subscribe)\b", re.IGNORECASE)
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

_LEAD = r"(?:(?:please|pls|plz|kindly|just|ok|okay|so|and|now|hi|hello)\s+)*"
_TAIL = (
    r"(?:\s+(?:please|pls|plz|now|anymore|any\s+more|again|ever\s+again|thanks|thank\s+you"
    r"|immediately|asap|at\s+all|ok|okay))*"
)
_VERBS = r"(?:contact|text|message|msg|email|e-mail|mail|call|phone|write\s+to|write|bother|spam)"
_PHRASES = (
    # I want to unsubscribe / I'd like to opt out / unsubscribe me from this list
    r"(?:i\s+|i'd\s+|id\s+)?(?:want|wish|would\s+like|like|need)\s+to\s+(?:unsubscribe|optout)"
    r"(?:\s+from\s+(?:this|these|your|the|all)(?:\s+(?:list|messages|texts|emails))?)?",
    r"(?:unsubscribe|optout)(?:\s+me)?\s+from\s+(?:this|these|your|the|all)"
    r"(?:\s+(?:list|messages|texts|emails|mailing\s+list))?",
    # stop sending me messages / quit texting me
    r"(?:stop|quit)\s+(?:sending|texting|messaging|emailing|contacting|calling|bothering"
    r"|spamming|writing)(?:\s+(?:to\s+)?me)?(?:\s+(?:any\s+)?(?:more\s+)?"
    r"(?:messages|texts|emails|mails))?",
    # remove me from your list / take me off the mailing list
    r"(?:remove|delete|take)\s+me\s+(?:off|from)(?:\s+(?:of\s+)?(?:your|the|this|all))?"
    r"(?:\s+(?:mailing|contact|texting|sms))?\s+(?:list|lists|contacts|database)",
    # do not contact me again / don't text me anymore / never email me
    rf"(?:do\s+not|don't|dont|never|pls\s+don't|please\s+don't)\s+{_VERBS}\s+me",
    r"no\s+more\s+(?:messages|texts|emails|mails|contact|calls)",
)
_PHRASE = re.compile(rf"^{_LEAD}(?:{'|'.join(_PHRASES)}){_TAIL}$")
_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)?")


def normalise(text: str) -> str:
    """NFKC (full-width and styled letters become plain), straight apostrophes,
    and "opt out"/"opt-out"/"un-subscribe" as one word."""
    text = unicodedata.normalize("NFKC", text).replace("\u2019", "'").replace("\u2018", "'")
    return _JOINED.sub(lambda m: m.group(1) + m.group(2), text)


def _keyword_clause(clause: str, wanted: set[str]) -> bool:
    words = [w.upper() for w in _WORD.findall(clause)]
    return any(w in wanted for w in words) and all(w in wanted or w in _FILLER for w in words)


def _phrase_clause(clause: str) -> bool:
    return bool(_PHRASE.match(" ".join(_TOKEN.findall(clause.lower()))))


def _matches(text: str, keywords: Iterable[str], *, phrases: bool) -> bool:
    wanted = {k.upper() for k in keywords}
    for clause in _CLAUSES.split(normalise(text)):
        if _keyword_clause(clause, wanted) or (phrases and _phrase_clause(clause)):
            return True
    return False


def is_opt_out(text: str, keywords: Iterable[str] = OPT_OUT_WORDS) -> bool:
    return _matches(text, keywords, phrases=True)


def is_opt_in(text: str, keywords: Iterable[str] = OPT_IN_WORDS) -> bool:
    return _matches(text, keywords, phrases=False)
