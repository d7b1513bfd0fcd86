"""One raw email in, what the channel contract carries out.

What the mail *is* is decided once, by :func:`relay.channels.mail.reading.read_mail`
(the same function ``relay inspect mail`` prints); here it becomes:

* a bounce about one of our messages -> a :class:`Receipt` (failed, with its
  reason; ``permanent`` when the address is dead);
* a delivery or delay report -> a :class:`Receipt` (delivered or delayed);
* an abuse complaint (ARF) -> a ``COMPLAINT`` :class:`Inbound` from the
  complaining recipient (an opt-out with the reason ``complaint``), or a
  complaint :class:`Receipt` on the reported message when no recipient is named;
* mail to the unsubscribe address, or an automatic "unsubscribe" mail -> an
  ``UNSUBSCRIBE`` :class:`Inbound`;
* an auto-reply -> an ``AUTO_REPLY`` :class:`Inbound`, with ``resume_at`` at
  the return date it names, else after the mailbox's default pause;
* anything else -> a ``MESSAGE`` :class:`Inbound` whose text is the new part
  of the reply; the whole email is kept in ``raw`` for audit.

Nothing is dropped except a copy of one of our own messages (its Message-ID
ends in ``@relay``) and a report about a message it cannot name. A bounce
whose original message cannot be found is kept as an auto-reply, so a person
can still see it.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.message import Message

from relay.channels.base import Inbound, Receipt
from relay.channels.mail.bounces import Bounce
from relay.channels.mail.outbound import angle
from relay.channels.mail.reading import MailKind, Reading, mail_date, parse_raw, read_mail
from relay.channels.mail.reports import Complaint
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
    #: How long an out-of-office with no readable return date pauses (None: not at all).
    away_default: timedelta | None = None
    #: The region of the contact writing from an address (day/month order of a return date).
    region_of: Callable[[str], str | None] | None = None


def parse_mail(raw: bytes, arrived: datetime | None, mailbox: Mailbox) -> Inbound | Receipt | None:
    """What one email means for relay (None: nothing to store)."""
    mail = parse_raw(raw)
    message_id = _message_id(mail, raw)
    if message_id.endswith("@relay>"):
        return None  # one of ours, e.g. a copy in a shared mailbox
    at = arrived or mail_date(mail)
    reading = read_mail(mail, received=at)
    if reading.kind is MailKind.AUTO_REPLY and mailbox.region_of is not None:
        region = mailbox.region_of(_sender(mail))
        if region:  # the same reading, with the contact's day/month order
            reading = read_mail(mail, received=at, region=region)
    if reading.kind is MailKind.COMPLAINT and reading.complaint is not None:
        if not reading.complaint.opts_out:
            log.info("%s report %s: nothing to do", reading.complaint.feedback_type, message_id)
            return None
        return _complaint(reading.complaint, mail, raw, message_id, at)
    if reading.bounce is not None:
        return _bounce(reading.bounce, mail, raw, message_id, at)
    if reading.kind is MailKind.DELIVERY_REPORT:
        log.info("report %s about no message of ours: nothing to do", message_id)
        return None
    return _inbound(reading, raw, message_id, at, mailbox)


def _complaint(
    complaint: Complaint, mail: Message, raw: bytes, message_id: str, at: datetime | None
) -> Inbound | Receipt | None:
    if complaint.recipient:
        return Inbound(
            sender=complaint.recipient,
            text=f"abuse complaint ({complaint.feedback_type}) from {_sender(mail)}",
            received_at=at,
            provider_message_id=message_id,
            references=_references(mail),
            kind=InboundKind.COMPLAINT,
            raw=_raw_text(raw),
        )
    if complaint.original_message_id:
        return Receipt(
            provider_message_id=angle(complaint.original_message_id),
            status=DeliveryStatus.DELIVERED,
            error=f"abuse complaint ({complaint.feedback_type})",
            opted_out=True,
            at=at,
            reason="complaint",
        )
    log.warning("abuse complaint %s names neither a recipient nor a message", message_id)
    return None


def _bounce(
    bounce: Bounce, mail: Message, raw: bytes, message_id: str, at: datetime | None
) -> Receipt | Inbound | None:
    if bounce.original_message_id:
        if bounce.delivered or bounce.delayed:
            status = DeliveryStatus.DELIVERED if bounce.delivered else DeliveryStatus.DELAYED
            return Receipt(angle(bounce.original_message_id), status, at=at)
        return Receipt(
            provider_message_id=angle(bounce.original_message_id),
            status=DeliveryStatus.BOUNCED,
            error=bounce.error,
            permanent=bounce.permanent,
            at=at,
            reason=bounce.reason.value,
        )
    if not bounce.failed:
        log.info("delivery report about an unknown message: %s", bounce.error)
        return None
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
    reading: Reading, raw: bytes, message_id: str, at: datetime | None, mailbox: Mailbox
) -> Inbound:
    mail = reading.mail
    kind = InboundKind.MESSAGE
    resume_at = None
    if _addressed_to(mail, mailbox.unsubscribe_address) or (
        reading.kind is MailKind.REPLY and reading.opt_out and _automatic(mail)
    ):
        kind = InboundKind.UNSUBSCRIBE
    elif reading.kind is MailKind.AUTO_REPLY:
        kind = InboundKind.AUTO_REPLY
        resume_at = reading.return_at
        if resume_at is None and mailbox.away_default and at is not None:
            resume_at = at + mailbox.away_default
    return Inbound(
        sender=_sender(mail),
        text=reading.text,
        received_at=at,
        provider_message_id=message_id,
        references=_references(mail),
        kind=kind,
        raw=_raw_text(raw),
        resume_at=resume_at,
    )


def _automatic(mail: Message) -> bool:
    from relay.channels.mail.autoreply import is_auto_reply

    return is_auto_reply(mail)


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


def _raw_text(raw: bytes) -> str:
    text = raw_for_store(raw)  # the very bytes, even with NUL or not UTF-8
    if len(text) > MAX_RAW:
        return text[:MAX_RAW] + "\n[... cut by relay at 1,000,000 characters]"
    return text
