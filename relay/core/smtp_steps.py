"""Which SMTP step a receiving server refused, as a bounce tells it.

It says what the refusal is about: at ``RCPT TO`` the server judged the
address; at ``MAIL FROM`` or ``HELO`` it judged us; after ``DATA`` it had
accepted the address and judged the message. :func:`relay.core.bounce_reasons.classify`
reads a dead address only where the step allows it. Standard library only.
"""

from __future__ import annotations

import re

# The SMTP command a refusal answered, as the common bounce formats write it: Postfix
# "(in reply to RCPT TO command)", Exim "after RCPT TO:<...>", Sendmail and Courier
# transcripts (">>> DATA" then "<<< 550 ..."), qmail "most progress was RCPT TO
# response" / "my name was rejected", and a few vendors' "SMTP command: DATA".
_COMMANDS = (
    r"in reply to (?P<c>rcpt|end of data|data|mail|helo|ehlo)\b",
    r"\bafter (?P<c>rcpt|end of data|data|mail from|final data|initial connection|helo|ehlo)\b",
    r"most progress was (?P<c>rcpt|data|mail)\b",
    r"\[(?P<c>rcpt)_to\]|\bsmtp:(?P<d>rcpt) host\b",
    r"smtp command\W{0,20}(?P<c>rcpt|data|mail|helo|ehlo)\b",
    r"(?P<c>my name) was rejected|did not like our (?P<d>data|final data)",
    r"(?P<c>recipient) address rejected",  # Postfix's answer to RCPT TO
)
_COMMAND_WORDS = tuple(re.compile(pattern, re.I) for pattern in _COMMANDS)
_TRANSCRIPT = re.compile(r"^\s*>>>\s*(\w+)[^\n]*\n((?:(?!\s*>>>)[^\n]*\n?)*)", re.M)
_REFUSAL = re.compile(r"^\s*<<<\s*[45]\d\d", re.M)
_COMMAND_NAMES = {
    "rcpt": "RCPT",
    "data": "DATA",
    "end of data": "DATA",
    "final data": "DATA",
    "mail": "MAIL",
    "mail from": "MAIL",
    "helo": "HELO",
    "ehlo": "HELO",
    "my name": "HELO",
    "initial connection": "CONN",
    "recipient": "RCPT",
}


def refused_at(text: str) -> str | None:
    """The SMTP command the receiving server refused (``RCPT``, ``DATA``, ``MAIL``,
    ``HELO``, ``CONN``), when the bounce says; None when it does not. A transcript's
    own lines (``>>>`` sent, ``<<<`` answered) win over a sentence about them."""
    for step in _TRANSCRIPT.finditer(text or ""):
        answers = step.group(2).count("<<<")
        if not _REFUSAL.search(step.group(2)):
            continue
        word = step.group(1).lower()
        if word == "data" and answers > 1:
            return "RCPT"  # pipelined: the first answer after DATA is the RCPT TO's
        return _COMMAND_NAMES.get(word, word.upper())
    for pattern in _COMMAND_WORDS:
        found = pattern.search(text or "")
        if found:
            word = " ".join((found.group("c") or found.groupdict().get("d") or "").lower().split())
            return _COMMAND_NAMES.get(word, word.upper())
    return None
