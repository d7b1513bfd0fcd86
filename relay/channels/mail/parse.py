"""One raw email in, what the channel contract carries out.

* a bounce about one of our messages -> a :class:`Receipt` (hard or soft);
* mail to the unsubscribe address -> an ``UNSUBSCRIBE`` :class:`Inbound`;
* an auto-reply -> an ``AUTO_REPLY`` :class:`Inbound`, with ``resume_at``
  when it names a return date;
* anything else -> a ``MESSAGE`` :class:`Inbound` whose text is the new part
  of the reply; the whole email is kept in ``raw`` for audit.

Nothing is dropped except a delay warning (the server is still trying) and
a copy of one of our own messages (its Message-ID ends in ``@relay``). A
bounce whose original message cannot be found is kept as an auto-reply, so a
person can still see it.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage, Message

from relay.channels.base import Inbound, Receipt
from relay.channels.mail.autoreply import is_auto_reply, return_date
from relay.channels.mail.bounces import Bounce, parse_bounce
from relay.channels.mail.headers import drop_unreadable
from relay.channels.mail.outbound import angle
from relay.channels.mail.text import html_to_text, new_part
from relay.core.storable import raw_for_store
from relay.core.values import DeliveryStatus, InboundKind

log = logging.getLogger("relay.channels.email")

#: The raw message kept for audit is cut here: attachments must not bloat the store.
MAX_RAW = 1_000_000
_RECIPIENT_HEADERS = ("To", "Cc", "Delivered-To", "X-Original-To", "Envelope-To")


@dataclass(frozen=True)
class Mailbox:
    """What the parser needs to know about our side of the conversation."""

    address: str
    unsubscribe_address: str


def parse_mail(raw: bytes, arrived: datetime | None, mailbox: Mailbox) -> Inbound | Receipt | None:
    """What one email means for relay (None: nothing to store)."""
    from email import message_from_bytes
    from email.policy import default

    mail = message_from_bytes(raw, policy=default)
    unreadable = drop_unreadable(mail)
    if unreadable:
        log.warning("mail with unreadable header(s) %s: read without them", ", ".join(unreadable))
    message_id = _message_id(mail, raw)
    if message_id.endswith("@relay>"):
        return None  # one of ours, e.g. a copy in a shared mailbox
    at = arrived or _date(mail)
    bounce = parse_bounce(mail)
    if bounce is not None:
        return _bounce(bounce, mail, raw, message_id, at)
    return _inbound(mail, raw, message_id, at, mailbox)


def _bounce(
    bounce: Bounce, mail: Message, raw: bytes, message_id: str, at: datetime | None
) -> Receipt | Inbound | None:
    if bounce.delayed:
        log.info("delivery delayed (still being retried): %s", bounce.error)
        return None
    if bounce.original_message_id:
        delivered = bounce.delivered
        return Receipt(
            provider_message_id=angle(bounce.original_message_id),
            status=DeliveryStatus.DELIVERED if delivered else DeliveryStatus.BOUNCED,
            error=None if delivered else bounce.error,
            permanent=bounce.permanent and not delivered,
            at=at,
        )
    return Inbound(
        sender=_sender(mail),
        text=bounce.error,
        received_at=at,
        provider_message_id=message_id,
        references=_references(mail),
        kind=InboundKind.AUTO_REPLY,
        raw=_raw_text(raw),
    )


def _inbound(
    mail: Message, raw: bytes, message_id: str, at: datetime | None, mailbox: Mailbox
) -> Inbound:
    text = new_part(_body(mail)) or str(mail.get("Subject", "")).strip()
    kind = InboundKind.MESSAGE
    resume_at = None
    if _addressed_to(mail, mailbox.unsubscribe_address):
        kind = InboundKind.UNSUBSCRIBE
    elif is_auto_reply(mail):
        kind = InboundKind.AUTO_REPLY
        resume_at = return_date(text, at or datetime.now(UTC))
    return Inbound(
        sender=_sender(mail),
        text=text,
        received_at=at,
        provider_message_id=message_id,
        references=_references(mail),
        kind=kind,
        raw=_raw_text(raw),
        resume_at=resume_at,
    )


def _body(mail: Message) -> str:
    """The text/plain part, else the text/html part converted; '' for neither."""
    if isinstance(mail, EmailMessage):
        part = mail.get_body(preferencelist=("plain", "html"))
        if part is not None:
            try:
                content = part.get_content()
            except (LookupError, ValueError):  # an unknown charset
                payload = part.get_payload(decode=True)
                content = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else ""
            if part.get_content_type() == "text/html":
                return html_to_text(str(content))
            return str(content)
    return ""


def _sender(mail: Message) -> str:
    from email.utils import parseaddr

    for header in ("From", "Sender", "Return-Path"):
        address = parseaddr(str(mail.get(header, "")))[1]
        if address:
            return address.lower()
    return "unknown"


def _addressed_to(mail: Message, address: str) -> bool:
    from email.utils import getaddresses

    values = [str(v) for h in _RECIPIENT_HEADERS for v in mail.get_all(h, [])]
    return any(found.lower() == address.lower() for _, found in getaddresses(values))


def _references(mail: Message) -> tuple[str, ...]:
    """In-Reply-To first, then References newest first, each once."""
    ids = _ids(str(mail.get("In-Reply-To", "")))
    ids += list(reversed(_ids(str(mail.get("References", "")))))
    return tuple(dict.fromkeys(ids))


def _ids(value: str) -> list[str]:
    import re

    return [angle(found) for found in re.findall(r"<[^<>\s]+>", value)]


def _message_id(mail: Message, raw: bytes) -> str:
    """The Message-ID, or one made from the content so that re-reading still dedupes."""
    found = _ids(str(mail.get("Message-ID", "")))
    if found:
        return found[0]
    return f"<{hashlib.sha256(raw).hexdigest()[:32]}@no-message-id>"


def _date(mail: Message) -> datetime | None:
    from email.utils import parsedate_to_datetime

    try:
        value = parsedate_to_datetime(str(mail.get("Date", "")))
    except (TypeError, ValueError, IndexError):
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _raw_text(raw: bytes) -> str:
    text = raw_for_store(raw)  # the very bytes, even with NUL or not UTF-8
    if len(text) > MAX_RAW:
        return text[:MAX_RAW] + "\n[... cut by relay at 1,000,000 characters]"
    return text
