"""What one raw email is and means, decided once for the daemon and for ``relay inspect``.

:func:`read_mail` sorts a mail into one of five kinds, in this order (the
first that fits wins):

* ``complaint``: an abuse report (ARF, RFC 5965) about one of our messages;
* ``bounce``: a delivery that failed, with its reason, its failed
  recipients, its status and the message it is about;
* ``delivery_report``: a success report or a "still trying" delay warning;
* ``auto_reply``: an out-of-office or autoresponder (RFC 3834 and vendor
  headers, subjects in many languages), with the return date it names;
* ``reply``: a person writing; its ``text`` is the new part the agent sees.

:func:`relay.channels.mail.parse.parse_mail` turns a reading into what the
channel contract carries; ``relay inspect mail`` prints it. Both call this one
function, so the command shows exactly what the daemon would do.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage, Message
from enum import StrEnum

from relay.channels.mail.autoreply import is_auto_reply, return_date
from relay.channels.mail.bounces import Bounce, parse_bounce
from relay.channels.mail.headers import drop_unreadable
from relay.channels.mail.reports import Complaint, is_dmarc_report, parse_complaint
from relay.channels.mail.text import html_to_text, new_part
from relay.core.optout import is_opt_out

#: How long an out-of-office that names no readable return date pauses its conversation.
DEFAULT_AWAY = timedelta(days=7)


log = logging.getLogger("relay.channels.email")


class MailKind(StrEnum):
    REPLY = "reply"
    BOUNCE = "bounce"
    AUTO_REPLY = "auto_reply"
    COMPLAINT = "complaint"
    DELIVERY_REPORT = "delivery_report"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Reading:
    """What relay makes of one email."""

    mail: Message
    kind: MailKind
    #: The Date header (None when missing or unreadable).
    date: datetime | None
    #: The new text the agent would see (a reply or an auto-reply), else ''.
    text: str
    #: The mail would opt its sender (a complaint: the complaining recipient) out.
    opt_out: bool
    bounce: Bounce | None = None
    complaint: Complaint | None = None
    #: For an auto-reply: the return date it names, None when it names none.
    return_at: datetime | None = None


def parse_raw(raw: bytes) -> Message:
    """The mail, without the headers the standard library's parser crashes on (a
    broken ``Cc:``): one bad header must not lose the reply (relay inspect reads
    it the same way)."""
    from email import message_from_bytes
    from email.policy import default

    mail = message_from_bytes(raw, policy=default)
    unreadable = drop_unreadable(mail)
    if unreadable:
        log.warning("mail with unreadable header(s) %s: read without them", ", ".join(unreadable))
    return mail


def read_mail(
    raw: bytes | Message,
    *,
    received: datetime | None = None,
    region: str | None = None,
    opt_out_words: tuple[str, ...] | None = None,
) -> Reading:
    """What ``raw`` is (see the module's docstring). ``received`` is when it arrived
    (return dates are read relative to it; default: its Date header); ``region``
    is the contact's, for day/month order in numeric return dates."""
    mail = raw if isinstance(raw, Message) else parse_raw(raw)
    date = mail_date(mail)
    complaint = parse_complaint(mail)
    if complaint is not None:
        return Reading(mail, MailKind.COMPLAINT, date, "", complaint.opts_out, complaint=complaint)
    bounce = parse_bounce(mail)
    if bounce is not None:
        kind = MailKind.BOUNCE if bounce.failed else MailKind.DELIVERY_REPORT
        return Reading(mail, kind, date, "", False, bounce=bounce)
    if is_dmarc_report(mail):  # a report to the domain's owner: about no one message
        return Reading(mail, MailKind.DELIVERY_REPORT, date, "", False)
    text = new_part(body_text(mail)) or str(mail.get("Subject", "")).strip()
    subject = str(mail.get("Subject", "")).strip()
    automatic = is_auto_reply(mail)
    # An automatic mail whose subject is an opt-out is a List-Unsubscribe ``mailto:``
    # request sent by the contact's mail client: an opt-out, not an out-of-office.
    unsubscribing = automatic and is_opt_out(subject)
    if automatic and not unsubscribing:
        at = received or date or datetime.now(UTC)
        language = str(mail.get("Content-Language", "") or "").split(",")[0].strip() or None
        back = return_date(f"{subject}\n{text}", at, language=language, region=region)
        return Reading(mail, MailKind.AUTO_REPLY, date, text, False, return_at=back)
    words = {} if opt_out_words is None else {"keywords": opt_out_words}
    opted = unsubscribing or is_opt_out(text, **words)
    return Reading(mail, MailKind.REPLY, date, text, opted)


def body_text(mail: Message) -> str:
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


def mail_date(mail: Message) -> datetime | None:
    from email.utils import parsedate_to_datetime

    try:
        value = parsedate_to_datetime(str(mail.get("Date", "")))
    except (TypeError, ValueError, IndexError):
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def describe(reading: Reading, file: str) -> dict[str, object]:
    """The ``relay inspect mail --json`` object for one reading (schema: inspect-mail.json)."""
    bounce = None
    if reading.kind is MailKind.BOUNCE and reading.bounce is not None:
        found = reading.bounce
        bounce = {
            "reason": found.reason.value,
            "permanent": found.permanent,
            "recipients": list(found.recipients),
            "status": found.status,
            "original_message_id": found.original_message_id,
        }
    auto_reply = None
    if reading.kind is MailKind.AUTO_REPLY:
        back = reading.return_at.date().isoformat() if reading.return_at else None
        auto_reply = {"return_date": back}
    return {
        "file": file,
        "kind": reading.kind.value,
        "bounce": bounce,
        "auto_reply": auto_reply,
        "text": reading.text,
        "opt_out": reading.opt_out,
    }
