"""Recognising opt-out and opt-in messages, in the wording people use.

Text is NFKC-normalised (full-width letters are plain ``STOP``), lower-cased
and stripped of accents ("désabonnement" and "desabonnement" are one word);
"opt out" written apart or hyphenated is the keyword ``OPTOUT``. Then either
rule recognises an opt-out:

* the whole message is keywords and politeness ("STOP", "Stop please",
  "STOP. Thank you", "baja por favor", "Bitte abmelden", "Stop merci"),
  perhaps with a reason ("This is spam. Stop", "Wrong number. STOP") — but a
  keyword inside a message about something else ("Stop! No way, that's
  amazing", "End of May works", "Cancel the delivery") is the conversation's;
* a sentence that is one of the common ways of saying it, in English, Spanish,
  Portuguese, French, German, Italian and Dutch ("Please stop sending me these
  messages", "Lose my number", "Leave me alone", "Dejen de enviarme mensajes",
  "Não me envie mais mensagens", "Ne me contactez plus", "Schreiben Sie mir
  nicht mehr", "Non scrivetemi più", "Stuur me geen berichten meer"), guarded
  against the same words saying the opposite ("don't stop sending me
  updates", "don't call me before 10am", "No dejes de enviarme").

The sentences are small grammars per language (``relay.core.optout_phrases``),
written against sets nobody had tuned on (``tests/data/optout``, "blind").
Rules written from wordings cover the wordings their authors thought of; when
they find nothing, a small logistic regression (``relay.core.optout_model``)
reads the message, and says opt-out only when confident and when the message
holds a cue of stopping, removing or contacting: on each set it never saw,
it raised the rules' first-run recall from 0.66 to 0.89 over six sets (``bench/optout_loso.py``).

A miss costs a contact an unwanted message (and an agent can still record
the opt-out with its ``opt_out`` action); a false match ends a conversation
the contact wanted. Both are measured on real messages and on wordings in
seven languages by ``bench/accuracy_text.py``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import cache

from relay.core.optout_cues import says_opt_out_by_cues
from relay.core.optout_model import says_opt_out
from relay.core.optout_phrases import (
    FEWER,
    KEEP_WANTED,
    NEGATED,
    NOT_BEFORE,
    PHRASES,
    REASON,
    STOP_PHRASES,
)
from relay.core.regex_gate import gate

#: Carrier keywords (CTIA): exact on SMS, and the whole message anywhere.
OPT_OUT_WORDS = ("STOP", "STOPALL", "UNSUBSCRIBE", "END", "QUIT", "CANCEL", "REVOKE", "OPTOUT")
OPT_IN_WORDS = ("START", "UNSTOP")

#: The same keywords in the other six languages; always recognised as a whole message.
LOCAL_OPT_OUT_WORDS = (
    "BAJA", "ALTO", "DESUSCRIBIR", "SAIR", "PARAR", "DESCADASTRAR", "CANCELAR",
    "DESABONNEMENT", "DESINSCRIPTION", "STOPP", "ABMELDEN", "ABBESTELLEN", "AUSTRAGEN",
    "DISISCRIZIONE", "DISISCRIVIMI", "CANCELLAMI", "AFMELDEN", "UITSCHRIJVEN",
    # "that's enough" / "stop it" said to the sender: "Hört auf!", "basta!", "Chega!"
    "UNSUB", "ABMELDUNG", "DESCADASTRO", "BASTA", "CHEGA", "ARRETEZ", "PAREM", "SMETTETELA",
    "SMETTILA", "AUFHOREN",
)  # fmt: skip

_SENTENCES = re.compile(r"[.!?;\n]+|(?:^|\s)[-\u2013]+(?:\s|$)")
_CLAUSES = re.compile(r"[.!?;,:\n()\-\u2013]+")
_WORD = re.compile(r"[^\W\d_]+")
_JOINED = re.compile(r"\b(opt|un)[\s_-]+(out|subscribe)\b", re.IGNORECASE)

#: Words that may stand around a keyword without changing what it says.
_FILLER = frozenset(
    " ".join(
        (
            "please pls plz kindly now me us it all this thanks thank you thx ok okay just",
            "texting messaging contacting emailing calling texts messages emails sms",
            "por favor gracias obrigado obrigada pf merci svp stp beaucoup s il vous plait",
            "bitte danke grazie per favore graag aub alstublieft bedankt dank u wel",
            "auf endlich jetzt ermee ya ja inmediata inmediatamente immediate immediately",
            "immediata immediatamente imediato imediata immediat sofortige sofort direct directe",
        )
    ).split()
)
_HORT_AUF = re.compile(r"\bhor(?:t|en\s+sie|en)\s+(?:(?:endlich|bitte|jetzt|doch)\s+)*auf\b")
_STOP_RE = [re.compile(p) for p in STOP_PHRASES]
_PHRASE_RE = re.compile("|".join(f"(?:{p})" for p in PHRASES))


@cache
def _gates() -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """One cheap search each that any match of the stop wordings, and of the
    other wordings, needs (:mod:`relay.core.regex_gate`): most sentences have
    none, and skip the patterns."""
    return gate(STOP_PHRASES), gate(PHRASES)


def normalise(text: str) -> str:
    """NFKC, lower case, no accents, straight apostrophes, and "opt out" /
    "opt-out" / "un-subscribe" as one word."""
    text = unicodedata.normalize("NFKC", text).replace("\u2019", "'").replace("\u2018", "'")
    text = "".join(
        c for c in unicodedata.normalize("NFKD", text.lower()) if not unicodedata.combining(c)
    )
    return _JOINED.sub(lambda m: m.group(1) + m.group(2), text.replace("ß", "ss"))


def _words(clause: str) -> list[str]:
    return _WORD.findall(clause)


def _only_keywords(text: str, wanted: set[str], *, reasons: bool) -> bool:
    """The whole message is keywords and politeness (and, for opt-outs, a reason)."""
    found = False
    for clause in _CLAUSES.split(text):
        words = _words(clause)
        if not words:
            continue
        if any(w in wanted for w in words) and all(w in wanted or w in _FILLER for w in words):
            found = True
        elif all(w in _FILLER for w in words) or (reasons and REASON.search(clause)):
            continue
        else:
            return False
    return found


def _says_opt_out(sentence: str) -> bool:
    sentence = " ".join(sentence.split())
    if KEEP_WANTED.search(sentence) or FEWER.search(sentence):
        return False
    stops, phrases = _gates()
    for pattern in _STOP_RE if stops is None or stops.search(sentence) else ():
        for match in pattern.finditer(sentence):
            if not NOT_BEFORE.search(sentence[: match.start()]):
                return True
    if phrases is not None and not phrases.search(sentence):
        return False
    return any(
        not NEGATED.search(sentence[: match.start()]) for match in _PHRASE_RE.finditer(sentence)
    )


def is_opt_out(text: str, keywords: Iterable[str] = OPT_OUT_WORDS) -> bool:
    """Whether the message asks not to be contacted again (see the module docstring):
    the rules, then the scorer. A message of keywords alone ("STOP", "Stop please")
    is the configured keywords' to decide, never the scorer's."""
    keywords = tuple(keywords)
    if is_opt_out_by_rules(text, keywords):
        return True
    norm = normalise(text)
    every_keyword = {k.lower() for k in (*OPT_OUT_WORDS, *LOCAL_OPT_OUT_WORDS, *keywords)}
    if _only_keywords(norm, every_keyword, reasons=True):
        return False
    return says_opt_out(norm)


def is_opt_out_by_rules(text: str, keywords: Iterable[str] = OPT_OUT_WORDS) -> bool:
    """The keywords and wordings alone, without the scorer."""
    norm = normalise(text)
    wanted = {k.lower() for k in keywords} | {k.lower() for k in LOCAL_OPT_OUT_WORDS}
    # "Hört auf!" is the keyword "aufhören" (but "Hört, hört!" is not)
    if _only_keywords(_HORT_AUF.sub("aufhoren", norm), wanted, reasons=True):
        return True
    sentences = [" ".join(sentence.split()) for sentence in _SENTENCES.split(norm)]
    return any(_says_opt_out(s) or says_opt_out_by_cues(s) for s in sentences)


def is_opt_in(text: str, keywords: Iterable[str] = OPT_IN_WORDS) -> bool:
    """Whether the message is an opt-in keyword ("START", "Unstop please") on its own."""
    return _only_keywords(normalise(text), {k.lower() for k in keywords}, reasons=False)
