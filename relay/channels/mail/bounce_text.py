"""Reading the text of a bounce: the server's answer, the failed addresses, the copy.

Non-standard bounces (and the human part of standard ones) say in prose what
failed: "<ana@example.com>: host mx.example.com said: 550 5.1.1 User unknown".
These helpers find the server's first answer (the lines with an SMTP reply or
a status code, without the bounce's own boilerplate), the failed addresses
(named in the report before the copy of the original message, minus the
people and systems involved) and the headers of the returned message.
"""

from __future__ import annotations

import re
from email.message import Message

from relay.core.bounce_reasons import STATUS

#: The local-part prefix of a VERP return path: ``bounces+<token>@domain``.
VERP_PREFIX = "bounces+"

SMTP_REPLY = re.compile(r"(?<![\d.])([45])([0-5])(\d)(?=[ -]|$)", re.M)
ADDRESS = re.compile(
    r"(?<![\w.+=/-])([a-z0-9!#$%&'*+/=?^_`{|}~.-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,})(?!\w)",
    re.I,
)
# Where the copy of the original message starts in a plain-text bounce.
_ORIGINAL_STARTS = re.compile(
    r"^.*(below this line is a copy|(here|this) is a copy of|copy of the message, including|"
    r"copy of (the|your) (original )?message (follows|below|is (attached|below|included))|"
    r"original message "
    r"(follows|headers)|message headers follow|(?<!attached )returned message|unsent message below|"
    r"undelivered message|-{3,} ?(original message|message header|header of the original)|"
    r"included is a copy|headers of your message|your message reads|"
    r"^received: from|^return-path:).*$",
    re.I | re.M,
)
_NOT_A_RECIPIENT = re.compile(
    r"^(mailer[-_.]?daemon|post[-_.]?master|abuse|noc|hostmaster|root|mail[-_.]?delivery)@", re.I
)
_HEADER_LINE = re.compile(r"^[A-Za-z][\w-]*:\s")
_BOILERPLATE = re.compile(
    r"this is a permanent error|(failed|failure) permanently|permanent (fatal )?(error|failure)s?|"
    r"technical details of|could not be delivered|couldn't be delivered|i've given up|"
    r"sorry it didn't work out|the following address(es)? failed|to one or more of its recipients",
    re.I,
)


def error_text(body: str) -> str:
    """The lines of a bounce that carry the server's answer: those with an SMTP reply or
    a status code first (the receiving server's own words), else the lines with error words;
    without the bounce's own boilerplate ("This is a permanent error")."""
    report = _ORIGINAL_STARTS.split(body, maxsplit=1)[0] if body else ""
    answers = _first_answer(report)
    if answers:
        return _BOILERPLATE.sub(" ", answers)[:1500]
    return _BOILERPLATE.sub(" ", _error_lines(report or body))


def _first_answer(report: str) -> str:
    """The first server answer (a line with an SMTP reply or a status code) and the
    lines that continue it, up to the next answer: relay sends one message to one
    address, so the first failed recipient's answer is the one that matters."""
    taken: list[str] = []
    for raw in report.splitlines():
        line = raw.strip()
        answer = bool(STATUS.search(line) or SMTP_REPLY.search(line)) and not _HEADER_LINE.match(
            line
        )
        if answer and taken and not SMTP_REPLY.match(line[:4] + " "):
            break  # the next recipient's answer
        if answer and taken and not line[:3].isdigit():
            break
        if answer or (taken and line and not ADDRESS.match(line)):
            taken.append(" ".join(line.split()))
        elif taken:
            break
        if len(taken) >= 4:
            break
    return " ".join(taken)


def error_lines(body: str) -> str:
    """The report part's lines with error words (before the copy of the original)."""
    report = _ORIGINAL_STARTS.split(body, maxsplit=1)[0] if body else ""
    return _BOILERPLATE.sub(" ", _error_lines(report))


def _error_lines(body: str) -> str:
    lines = []
    for line in body.splitlines():
        stripped = " ".join(line.split())
        if not stripped or _HEADER_LINE.match(stripped):
            continue
        if STATUS.search(stripped) or SMTP_REPLY.search(stripped) or re.search(
            r"unknown|not exist|no such|quota|full|blocked|spam|denied|rejected|refused|"
            r"invalid|disabled|suspended|expired|timed? ?out|too (large|big)|exceed|"
            r"not found|(couldn't|could not|cannot) be found|unrout\w*able|no mx\b|"
            r"не существует|нет такого|переполнен|error|failed|unavailable|unable|"
            r"no smtp service|null mx",
            stripped,
            re.I,
        ):
            lines.append(stripped)
        if len(lines) >= 6:
            break
    return " ".join(lines)[:1500]


def unique(addresses: object) -> list[str]:
    seen: dict[str, None] = {}
    for address in addresses:  # type: ignore[attr-defined]
        if address:
            seen.setdefault(address, None)
    return list(seen)


def text_recipients(mail: Message, body: str) -> list[str]:
    """The failed addresses a plain-text bounce names.

    Addresses in the report part (before the copy of the original message),
    minus those of the people and systems involved (the bounce's own From/To,
    mailer daemons, the original's sender); failing that, the original's ``To``.
    """
    from email.utils import getaddresses

    ours = {
        a.lower()
        for _, a in getaddresses([str(v) for h in ("From", "To", "Return-Path", "Sender",
                                                   "Reply-To") for v in mail.get_all(h, [])])
        if a
    }
    original = _original_headers(mail)
    senders = {
        a.lower()
        for _, a in getaddresses(
            [str(v) for h in ("From", "Return-Path", "Sender") for v in original.get_all(h, [])]
        )
        if a
    }
    report = _ORIGINAL_STARTS.split(body, maxsplit=1)[0] if body else ""
    report = re.sub(r"https?://\S+", " ", report)
    found = unique(
        _clean(a)
        for a in ADDRESS.findall(report)
        if a.lower() not in ours | senders and not _NOT_A_RECIPIENT.match(a)
        and not a.lower().startswith(VERP_PREFIX)
    )
    if found:
        return found
    to = unique(
        a.lower()
        for _, a in getaddresses([str(v) for v in original.get_all("To", [])])
        if a and a.lower() not in ours
    )
    return to


def _clean(address: str) -> str:
    """``'ana@x.com`` or ``smtp=ana@x.com`` (Exchange's notation) -> ``ana@x.com``."""
    local, _, domain = address.lower().strip(".").rpartition("@")
    local = local.split("=")[-1] if re.match(r"^(smtp|rfc822|x400)=", local) else local
    return f"{local.lstrip(chr(39) + '`{|}~')}@{domain}"


def attached_headers(mail: Message) -> Message | None:
    """The headers of the message a report is about, from its attached copy
    (``message/rfc822``) or headers part (``text/rfc822-headers``); bounces and
    complaints (:mod:`relay.channels.mail.reports`) both read them here."""
    from email.parser import HeaderParser

    for part in mail.walk():
        kind = part.get_content_type()
        if kind == "message/rfc822":
            inner = part.get_payload()
            first = inner[0] if isinstance(inner, list) and inner else None
            if isinstance(first, Message):
                return first
        elif kind == "text/rfc822-headers":
            return HeaderParser().parsestr(decoded(part))
    return None


def _original_headers(mail: Message) -> Message:
    """The headers of the returned message: its attached part, else the quoted header lines."""
    from email.parser import HeaderParser

    attached = attached_headers(mail)
    if attached is not None:
        return attached
    body = report_text(mail)
    quoted = _ORIGINAL_STARTS.split(body, maxsplit=1)
    if len(quoted) > 1:
        block = re.sub(r"^[ \t]*>?[ \t]*", "", quoted[-1].lstrip("\n"), flags=re.M)
        return HeaderParser().parsestr(block.split("\n\n")[0] + "\n")
    return Message()


def report_text(mail: Message) -> str:
    """The human-readable part of a report: its text parts, outside any attached message."""
    texts: list[str] = []
    _collect(mail, texts)
    return "\n".join(texts)


def _collect(part: Message, texts: list[str]) -> None:
    kind = part.get_content_type()
    if kind in {"message/rfc822", "text/rfc822-headers", "message/delivery-status"}:
        return
    if part.get_content_maintype() == "multipart":
        payload = part.get_payload()
        if not isinstance(payload, list):
            texts.append(str(payload))  # a boundary the body never uses: the body is one text
            return
        for inner in payload:
            if isinstance(inner, Message):
                _collect(inner, texts)
        return
    if kind in {"text/plain", "text/html"} or part.get_content_maintype() == "text":
        text = decoded(part)
        if kind == "text/html":
            from relay.channels.mail.text import html_to_text

            text = html_to_text(text)
        texts.append(text)


def decoded(part: Message) -> str:
    payload = part.get_payload(decode=True)
    if isinstance(payload, bytes):
        charset = part.get_content_charset() or "utf-8"
        try:
            return payload.decode(charset, "replace")
        except LookupError:
            return payload.decode("utf-8", "replace")
    return str(part.get_payload())


def part_text(part: Message) -> str:
    """A part's text: decoded, or its sub-parts' headers for a list payload."""
    if isinstance(part.get_payload(decode=True), bytes):
        return decoded(part)  # an unknown charset falls back to UTF-8
    inner = part.get_payload()
    if isinstance(inner, list):
        return "\n".join(
            "\n".join(f"{k}: {v}" for k, v in p.items()) for p in inner if isinstance(p, Message)
        )
    return str(inner)
