"""Recognising bounces and finding which of our messages they are about.

Standard bounces are RFC 3464 delivery status notifications: a
``multipart/report; report-type=delivery-status`` with a
``message/delivery-status`` part (``Action``, ``Status`` 5.x.x / 4.x.x,
``Diagnostic-Code``) and the original message or its headers. Many servers
still send their own formats (qmail's "failure notice", Exchange's
"Undeliverable:", old Sendmail and Postfix texts): those are recognised by
sender and subject, and read for an SMTP status and a quoted ``Message-ID``.
The original ``Message-ID`` is how a bounce finds its outbound message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.message import Message

_DAEMON_SENDERS = re.compile(r"^(mailer-daemon|postmaster|mail-daemon|mailerdaemon)@", re.I)
_BOUNCE_SUBJECTS = re.compile(
    r"(undeliver(able|ed)|delivery (status notification|failure|has failed|failed)|"
    r"mail delivery (failed|failure|subsystem)|returned mail|failure notice|"
    r"could not be delivered|unzustellbar|non remis|no se puede entregar|"
    r"delivery notification)",
    re.I,
)
_STATUS = re.compile(r"\b([245])\.(\d{1,3})\.(\d{1,3})\b")
_SMTP_CODE = re.compile(r"^\s*([45])\d\d[ -]", re.M)
_PERMANENT_WORDS = re.compile(
    r"(permanent|user unknown|no such user|does not exist|unknown user|mailbox unavailable|"
    r"address rejected|recipient rejected|not found|invalid recipient|account (is )?disabled)",
    re.I,
)
_MESSAGE_ID = re.compile(r"^\s*(?:x-)?(?:original-)?message-id:\s*(<[^>\s]+>)", re.I | re.M)


@dataclass(frozen=True)
class Bounce:
    """What a bounce says: the Message-ID it is about, whether it is for good, and why."""

    original_message_id: str | None
    permanent: bool
    error: str
    delayed: bool = False  # a "still trying" warning (Action: delayed/relayed), not a failure
    delivered: bool = False  # a success report (Action: delivered), asked for by NOTIFY=SUCCESS


def parse_bounce(mail: Message) -> Bounce | None:
    """The bounce in ``mail``, or None when ``mail`` is not a bounce."""
    if mail.get_content_type() == "multipart/report":
        report = _delivery_status(mail)
        if report is not None:
            return _from_dsn(mail, report)
    if _looks_like_bounce(mail):
        return _from_text(mail)
    return None


def _looks_like_bounce(mail: Message) -> bool:
    from email.utils import parseaddr

    sender = parseaddr(str(mail.get("From", "")))[1]
    subject = str(mail.get("Subject", ""))
    return_path = str(mail.get("Return-Path", "")).strip()
    null_sender = return_path in {"<>", ""} and "Return-Path" in mail
    machine = bool(_DAEMON_SENDERS.match(sender)) or null_sender
    return machine and (bool(_BOUNCE_SUBJECTS.search(subject)) or _has_original(mail))


def _has_original(mail: Message) -> bool:
    return any(
        part.get_content_type() in {"message/rfc822", "text/rfc822-headers"} for part in mail.walk()
    )


def _delivery_status(mail: Message) -> list[Message] | None:
    """The per-message and per-recipient field groups of the DSN, or None."""
    for part in mail.walk():
        if part.get_content_type() in {"message/delivery-status", "message/global-delivery-status"}:
            payload = part.get_payload()
            if isinstance(payload, list):
                return [p for p in payload if isinstance(p, Message)]
            return _field_groups(str(payload))
    return None


def _field_groups(text: str) -> list[Message]:
    """A delivery-status body the parser left as text: blank-line separated header blocks."""
    from email.parser import HeaderParser

    blocks = re.split(r"\r?\n\s*\r?\n", text.strip())
    return [HeaderParser().parsestr(block) for block in blocks if block.strip()]


def _from_dsn(mail: Message, groups: list[Message]) -> Bounce:
    recipients = [g for g in groups if g.get("Action") or g.get("Status")] or groups
    failed = [g for g in recipients if str(g.get("Action", "failed")).lower().strip() == "failed"]
    chosen = (failed or recipients or [Message()])[0]
    status = str(chosen.get("Status", "")).strip()
    diagnostic = " ".join(str(chosen.get("Diagnostic-Code", "")).split())
    recipient = str(chosen.get("Final-Recipient", "")).split(";")[-1].strip()
    action = str(chosen.get("Action", "failed")).strip().lower()
    error = "; ".join(
        bit for bit in (f"bounced: {status or 'failed'}", recipient, diagnostic) if bit
    )
    return Bounce(
        original_message_id=original_message_id(mail),
        permanent=status.startswith("5") and action == "failed",
        error=error[:500],
        delayed=not failed and action in {"delayed", "relayed", "expanded"},
        delivered=not failed and action == "delivered",
    )


def _from_text(mail: Message) -> Bounce:
    body = _plain_text(mail)
    status = _STATUS.search(body)
    code = _SMTP_CODE.search(body)
    if status:
        permanent = status.group(1) == "5"
    elif code:
        permanent = code.group(1) == "5"
    else:
        permanent = bool(_PERMANENT_WORDS.search(body))
    detail = _first_error_line(body) or str(mail.get("Subject", "")).strip()
    return Bounce(original_message_id(mail), permanent, f"bounced: {detail}"[:500])


def _first_error_line(body: str) -> str | None:
    for line in body.splitlines():
        if _STATUS.search(line) or _SMTP_CODE.match(line) or _PERMANENT_WORDS.search(line):
            return " ".join(line.split())
    return None


def _plain_text(mail: Message) -> str:
    texts = []
    for part in mail.walk():
        if part.get_content_type() == "text/plain":
            payload = part.get_payload(decode=True)
            if isinstance(payload, bytes):
                texts.append(payload.decode(part.get_content_charset() or "utf-8", "replace"))
    return "\n".join(texts)


def original_message_id(mail: Message) -> str | None:
    """The Message-ID of the bounced mail: from the returned message or headers part,
    an ``Original-Message-ID`` / ``X-Original-Message-ID`` field, or a quoted header line."""
    for part in mail.walk():
        kind = part.get_content_type()
        if kind == "message/rfc822":
            inner = part.get_payload()
            first = inner[0] if isinstance(inner, list) and inner else None
            if first is not None and not isinstance(first, str) and first.get("Message-ID"):
                return str(first["Message-ID"]).strip()
        elif kind == "text/rfc822-headers":
            found = _MESSAGE_ID.search(_decoded(part))
            if found:
                return found.group(1)
    for header in ("Original-Message-ID", "X-Original-Message-ID"):
        if mail.get(header):
            return str(mail[header]).strip()
    found = _MESSAGE_ID.search(_plain_text(mail))
    return found.group(1) if found else None


def _decoded(part: Message) -> str:
    payload = part.get_payload(decode=True)
    if isinstance(payload, bytes):
        return payload.decode(part.get_content_charset() or "utf-8", "replace")
    return str(part.get_payload())
