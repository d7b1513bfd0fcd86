"""Recognising auto-replies (out-of-office, vacation, autoresponders) and their return date.

An auto-reply is not the contact answering: relay stores it, never answers it
(so two autoresponders can never loop), and does not count it as a reply. The
headers of RFC 3834 and the de-facto ones (Exchange, Postfix vacation,
autoresponders of hosting panels) decide first; the subject lines that mail
clients put on out-of-office notices in the common languages decide next.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from email.message import Message

_AUTO_PRECEDENCE = frozenset({"auto_reply", "bulk", "junk"})
_SUBJECTS = re.compile(
    r"^\s*("
    r"out of (the )?office|automatic reply|auto(matic)?[- ]?(reply|response)|autoreply|"
    r"vacation( reply| response)?|on vacation|away from (the )?office|i am away|"
    r"abwesenheitsnotiz|automatische antwort|abwesend|"
    r"r[ée]ponse automatique|absence du bureau|absent\b|"
    r"respuesta autom[áa]tica|fuera de la oficina|ausente|"
    r"risposta automatica|fuori sede|fuori ufficio|"
    r"automatisch antwoord|afwezigheidsbericht|afwezig|"
    r"autosvar|fr[åa]nvaro|automatisk svar|"
    r"odpowied[źz] automatyczna|poza biurem|"
    r"автоответ|自动回复|自動応答"
    r")",
    re.IGNORECASE,
)


def is_auto_reply(mail: Message) -> bool:
    """True when a machine sent this mail on the contact's behalf."""
    auto_submitted = str(mail.get("Auto-Submitted", "")).strip().lower()
    if auto_submitted and auto_submitted != "no":
        return True
    if any(mail.get(h) is not None for h in ("X-Autoreply", "X-Autorespond", "X-Autoresponder")):
        return True
    if str(mail.get("Precedence", "")).strip().lower() in _AUTO_PRECEDENCE:
        return True
    if str(mail.get("X-Auto-Response-Suppress", "")).strip() and _SUBJECTS.match(
        str(mail.get("Subject", ""))
    ):
        return True
    if "autoresponder" in str(mail.get("X-POST-MessageClass", "")).lower():
        return True
    return bool(_SUBJECTS.match(_unprefixed(str(mail.get("Subject", "")))))


def _unprefixed(subject: str) -> str:
    """Outlook writes "Automatic reply: Re: Delivery"; some clients put "Re:" first."""
    return re.sub(r"^\s*((re|aw|fw|fwd|sv|wg)\s*:\s*)+", "", subject, flags=re.IGNORECASE)


# -- the return date -------------------------------------------------------------------------

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            "january jan januar janvier enero gennaio januari janeiro stycznia",
            "february feb februar février fevrier febrero febbraio februari fevereiro lutego",
            "march mar märz maerz mars marzo maart março marca",
            "april apr avril abril aprile kwietnia",
            "may mai mayo maggio mei maj maja",
            "june jun juni juin junio giugno czerwca",
            "july jul juli juillet julio luglio lipca",
            "august aug août aout agosto augustus sierpnia",
            "september sep sept septembre septiembre settembre setembro września",
            "october oct oktober octobre octubre ottobre okt outubro października",
            "november nov novembre noviembre novembro listopada",
            "december dec dezember décembre decembre diciembre dicembre dez dezembro grudnia",
        ),
        start=1,
    )
    for name in names.split()
}
_MONTH = "(" + "|".join(sorted(map(re.escape, _MONTHS), key=len, reverse=True)) + r")\.?"
# "until" names the last day away; the others name the day of return.
_UNTIL = (
    r"(until|till|through|thru|bis( zum| einschließlich)?|jusqu'(au|à)|hasta( el)?|"
    r"fino al|tot( en met)?)"
)
_BACK = (
    r"(back|return(ing)?|returns|in the office|zurück|wieder (im büro|da|erreichbar)|"
    r"de retour|retour|de vuelta|regreso|rientro|terug)"
)
_DATE = (
    rf"(?P<iso>\d{{4}}-\d{{2}}-\d{{2}})"
    rf"|(?P<num>\d{{1,2}})[./](?P<num2>\d{{1,2}})(?:[./](?P<year>\d{{2,4}}))?"
    rf"|(?P<day>\d{{1,2}})(?:st|nd|rd|th|er|\.)?(?: de)? {_MONTH}(?:,? (?P<year2>\d{{4}}))?"
    rf"|{_MONTH} (?P<day2>\d{{1,2}})(?:st|nd|rd|th)?(?:,? (?P<year3>\d{{4}}))?"
)
_PHRASE = re.compile(
    rf"(?P<kind>{_UNTIL}|{_BACK})\b[^.\n\d]{{0,40}}?(?:{_DATE})",
    re.IGNORECASE,
)


def return_date(text: str, received: datetime) -> datetime | None:
    """When the sender of an out-of-office is back, as the start of that day (UTC).

    "back on 17 March", "returning Monday 2025-03-17", "zurück am 17.03.",
    "de retour le 17 mars": that day. "until 16 March", "bis zum 16.03.":
    the day after. Numeric dates are read day first ("03/04" is 3 April)
    unless the second number cannot be a month. A date without a year is the
    next such day after ``received``. Dates in the past or more than a year
    ahead are ignored (a misread date must not pause a conversation for long).
    """
    received = received.astimezone(UTC)
    for match in _PHRASE.finditer(text):
        day = _date_of(match, received.date())
        if day is None:
            continue
        if re.match(_UNTIL, match.group("kind"), re.IGNORECASE):
            day += timedelta(days=1)
        moment = datetime(day.year, day.month, day.day, tzinfo=UTC)
        if received < moment <= received + timedelta(days=366):
            return moment
    return None


def _date_of(match: re.Match[str], today: date) -> date | None:
    """The calendar date a phrase names, or None when it names none."""
    groups = match.groupdict()
    try:
        if groups["iso"]:
            return date.fromisoformat(groups["iso"])
        if groups["num"]:
            first, second = int(groups["num"]), int(groups["num2"])
            day, month = (second, first) if second > 12 >= first else (first, second)
            return _with_year(day, month, groups["year"], today)
        month_name = next(g for g in match.groups()[::-1] if g and g.lower().rstrip(".") in _MONTHS)
        month = _MONTHS[month_name.lower().rstrip(".")]
        day = int(groups["day"] or groups["day2"])
        return _with_year(day, month, groups["year2"] or groups["year3"], today)
    except (ValueError, StopIteration, TypeError):
        return None


def _with_year(day: int, month: int, year: str | None, today: date) -> date:
    if year:
        number = int(year)
        return date(number + 2000 if number < 100 else number, month, day)
    candidate = date(today.year, month, day)
    return candidate if candidate >= today else date(today.year + 1, month, day)
