"""A small statistical reading of opt-outs, for wordings the rules never saw.

The rules in :mod:`relay.core.optout` score 1.0 on every set they were tuned
on and 0.53-0.70 recall on each new set's first run. This is a logistic
regression over the normalised message: words, word pairs, words after a
negation marked as negated, and the *kinds* of word in a row (a negation, a
verb of stopping, removing or contacting, "more/again", "keep on", myself),
which carry what one language teaches to the other six. It is trained by
``bench/train_optout.py`` on the written sets and real SMS, stored in
``relay/core/data/optout_model.json`` and read once, on the first message
scored, so a command that never reads a reply pays nothing. It decides only
at a threshold chosen on held-out scores and with a cue of stopping,
removing or contacting in the message (measured by ``bench/optout_loso.py``).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from functools import lru_cache
from pathlib import Path

from relay.core.optout_cues import CONTACT as _CONTACT
from relay.core.optout_cues import STOP as _STOP

MODEL_PATH = Path(__file__).resolve().parent / "data" / "optout_model.json"

_TOKEN = re.compile(r"https?://\S+|www\.\S+|\S+@\S+\.\w+|\d+|[^\W\d_]+(?:'[^\W\d_]+)?")
#: Words that turn the next few around ("don't stop", "no me borren", "n'arrêtez pas").
_NEGATION_WORDS = (
    "not don't dont do never no nao ne n' nicht kein keine keinen nie non niet geen nooit"
    " nunca jamais mai isn't aren't won't can't didn't"
)
_NEGATION = frozenset(_NEGATION_WORDS.split())
_CLAUSE_END = re.compile(r"[.!?;,:\n()]")
_NEGATED_SPAN = 3
#: "Dejen de", "paren de", "deixem de", "hou op": stopping, in two words.
_STOP_VERBS = "dejen deje deja dejad paren pare para parem deixem deixe deixa hou"
_STOP_WORDS = frozenset(_STOP_VERBS.split())


def _tokens(norm: str) -> list[str]:
    """Words of one clause: numbers are "0", links and addresses "<url>"."""
    found = []
    for token in _TOKEN.findall(norm):
        if token[0].isdigit():
            found.append("0")
        elif "://" in token or token.startswith("www.") or "@" in token:
            found.append("<url>")
        else:
            found.append(token)
    return found


def features(norm: str) -> list[str]:
    """The features of a normalised message (see :func:`relay.core.optout.normalise`):
    per clause, its words, the words after a negation marked as such, word pairs, and
    the kinds of word in a row."""
    found = ["<bias>"]
    for clause in _CLAUSE_END.split(norm):
        words = _tokens(clause)
        if not words:
            continue
        negated = 0
        for before, word in zip(["<s>", *words], words, strict=False):
            found.append(f"w:{word}")
            if negated:
                found.append(f"n:{word}")
                negated -= 1
            if word in _NEGATION or word.endswith("n't"):
                negated = _NEGATED_SPAN
            found.append(f"b:{before} {word}")
        found.append(f"b:{words[-1]} </s>")
        found.extend(_kind_features(words))
    return found


#: Kinds of word that say the same in every language: stopping, contacting, removing,
#: a negation, "more/again", "keep on", myself. The model learns "NEG REMOVE" once for all.
_KINDS = (
    (
        "NEG",
        re.compile(
            r"not|don't|dont|never|no|nao|ne|n'|nicht|kein\w*|nie|non|niet|geen|nooit"
            r"|nunca|jamais|mai|\w+n't"
        ),
    ),
    (
        "MORE",
        re.compile(
            r"again|anymore|more|further|longer|mas|nuevo|mais|novo|novamente|plus"
            r"|mehr|wieder|piu|nuovo|ancora|meer|nog"
        ),
    ),
    (
        "KEEP",
        re.compile(
            r"keep|continu\w*|sig(?:o|ue|a|an|uen|am)|seguir|weiter\w*|blijf\w*"
            r"|still|ainda|encore|gerne|graag|volontiers|pode|puede|puedes|podes|kannst|konnen|mag"
        ),
    ),
    ("ME", re.compile(r"me|mi|moi|mich|mir|mij|us|nos|m'|my|mes|meu|minha|mein\w*|mio|mia|mijn")),
)


def _kind(word: str) -> str | None:
    for name, pattern in _KINDS:
        if pattern.fullmatch(word):
            return name
    if _STOP.fullmatch(word) or word in _STOP_WORDS:
        return "STOP"
    if _REMOVING.fullmatch(word):
        return "REMOVE"
    if _CONTACT.fullmatch(word):
        return "CONTACT"
    return None


def _kind_features(words: list[str]) -> list[str]:
    """Each kind, and each two and three kinds in a row (other words skipped)."""
    kinds = [k for k in (_kind(w) for w in words) if k]
    found = [f"k:{k}" for k in kinds]
    found.extend(f"k:{a} {b}" for a, b in itertools.pairwise(kinds))
    found.extend(f"k:{a} {b} {c}" for a, b, c in zip(kinds, kinds[1:], kinds[2:], strict=False))
    return found


@lru_cache(maxsize=1)
def _model() -> tuple[dict[str, float], float]:
    """The stored weights and threshold, read once, on first use."""
    data = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    return data["weights"], float(data["threshold"])


def score(norm: str, weights: dict[str, float] | None = None) -> float:
    """The probability that a normalised message is an opt-out (by the stored weights,
    or by ``weights`` when training)."""
    table = _model()[0] if weights is None else weights
    total = sum(table.get(feature, 0.0) for feature in features(norm))
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, total))))


def says_opt_out(norm: str) -> bool:
    """Whether the scorer reads a normalised message as an opt-out: at or above the
    stored threshold, and with a cue of stopping, removing or contacting."""
    return may_decide(norm) and score(norm) >= _model()[1]


#: Removing, unsubscribing, leaving alone: the other cues besides stopping and contacting.
_REMOVING = re.compile(
    r"\b(?:remov\w*|delet\w*|unsub\w*|optout|take\s+(?:me|us|this|my)\b|list[ae]?|lijst|alone"
    r"|erase\w*|borr\w*|elimin\w*|sac\w*|baja|apag\w*|descadastr\w*|retir\w*|exclu\w*"
    r"|supprim\w*|desinscri\w*|desabonn\w*|enlev\w*|radie\w*|losch\w*|austrag\w*|abmeld\w*"
    r"|entfern\w*|streich\w*|abbestell\w*|rimuov\w*|cancell\w*|togli\w*|disiscri\w*"
    r"|verwijder\w*|afmeld\w*|uitschrij\w*|haal|paz|tranquil\w*|paix|ruhe|pace|rust|bother\w*"
    r"|molest\w*|incomod\w*|derang\w*|storen|belastig\w*|harass\w*|lastig|recib\w*|receb\w*"
    r"|recevoir|recu|erhalten|bekommen|ontvang\w*|ricever\w*|receiv\w*|verteiler|verzendlijst"
    r"|datos|dados|donnees|daten|dati|gegevens|number|numero|nummer|rayez|schrap|oubli\w*"
    r"|dimentic\w*|lose|forget|suscri\w*|inscri\w*|sair|saia|parar|alto|end|revoke|cancel\w*"
    r"|ab|af|uit|out|stopp\w*|zusendung\w*|werbung|benader\w*|anschreiben|stellen\s+sie)\b"
)


#: Contacting someone else ("Stop calling everyone saying I might have cancer").
_SOMEONE_ELSE = re.compile(
    rf"(?:{_CONTACT.pattern})\s+(?:everyone|everybody|him|her|them|people|todo\s+el\s+mundo"
    r"|todos|todo\s+mundo|tout\s+le\s+monde|tutti|alle|iedereen|my\s+(?:mom|mum|dad|mother"
    r"|father|wife|husband|sister|brother|family|friends|boss))\b"
)


#: Taking oneself off a role, not off the sender's list ("remove me as the contact for
#: the delivery", "quítenme como contacto del pedido", "entfernen Sie mich als Ansprechpartner").
_AS_ROLE = re.compile(
    r"\b(?:as|como|comme|als|come)\s+(?:(?:the|a|el|la|le|o|a|der|die|il|de|het)\s+)?"
    r"(?:(?:main|primary|billing|technical)\s+)?(?:contact(?:o|e)?\b(?!\s+(?:list|lista))"
    r"|point\s+of\s+contact|contato|contatto|ansprechpartner\w*|kontaktperson\w*"
    r"|contactpersoon|admin\w*|owner|recipient|destinatari\w*|responsable|responsavel"
    r"|responsabile|verantwortlich\w*|beheerder)"
)


def may_decide(norm: str) -> bool:
    """Whether the scorer may call a normalised message an opt-out: it holds a cue of
    stopping, removing or contacting ("that's amazing" has none), and not of contacting
    someone else or of leaving a role ("remove me as the contact for the delivery")."""
    if _SOMEONE_ELSE.search(norm) or _AS_ROLE.search(norm):
        return False
    if _STOP.search(norm) or _CONTACT.search(norm) or _REMOVING.search(norm):
        return True
    return any(_kind(word) == "MORE" for word in _tokens(norm))
