"""Abuse complaints: a mailbox provider telling us its user marked our mail as spam.

Feedback loops send them in the Abuse Reporting Format (RFC 5965): a
``multipart/report; report-type=feedback-report`` with a
``message/feedback-report`` part (``Feedback-Type: abuse``,
``Original-Rcpt-To``, ``Original-Mail-From``...) and the reported message or
its headers. Some loops send the fields as a plain-text part instead. A
complaint is the recipient saying "no more": relay opts the contact out with
the reason ``complaint``; it is never a reply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.message import Message

from relay.channels.mail.bounce_text import attached_headers, part_text

_FIELD = re.compile(r"^feedback-type:\s*([\w-]+)", re.I | re.M)
_ADDRESS = re.compile(r"[\w.!#$%&'*+/=?^`{|}~-]+@[\w-]+(?:\.[\w-]+)+")


#: Feedback types that are no one asking to stop: a DMARC/SPF/DKIM failure report
#: (RFC 6591) and a user marking our mail as *not* spam.
NOT_COMPLAINTS = frozenset({"auth-failure", "dmarc", "not-spam"})
#: A DMARC aggregate report's attachment (RFC 7489 7.2.1.1):
#: ``receiver!policy-domain!begin!end[!id].xml[.gz]`` or ``.zip``.
_DMARC_FILE = re.compile(r"^[^!\s/]+![^!\s/]+!\d{9,11}!\d{9,11}(?:![^.\s]+)?\.(?:xml|zip|gz)", re.I)


@dataclass(frozen=True)
class Complaint:
    """Who complained (the original recipient, when the report names one) and of what kind."""

    feedback_type: str
    recipient: str | None
    original_message_id: str | None

    @property
    def opts_out(self) -> bool:
        """The recipient asked for no more mail (abuse, fraud, virus, other), rather than
        a report about authentication or a "this is not spam"."""
        return self.feedback_type.lower() not in NOT_COMPLAINTS


def is_dmarc_report(mail: Message) -> bool:
    """A DMARC aggregate report: statistics for the domain's owner, never a reply."""
    return any(_DMARC_FILE.match(part.get_filename() or "") for part in mail.walk())


def parse_complaint(mail: Message) -> Complaint | None:
    """The ARF report (or SES complaint notification) in ``mail``, or None when it is none."""
    from relay.channels.mail.ses import ses_notification

    ses = ses_notification(mail)
    if ses is not None:
        if ses.get("notificationType") != "Complaint":
            return None
        complaint = ses.get("complaint")
        info = complaint if isinstance(complaint, dict) else {}
        people = info.get("complainedRecipients") or []
        first = people[0] if isinstance(people, list) and people else {}
        address = first.get("emailAddress") if isinstance(first, dict) else None
        mail_info = ses.get("mail")
        headers = mail_info if isinstance(mail_info, dict) else {}
        message_id = headers.get("messageId")
        return Complaint(
            str(info.get("complaintFeedbackType") or "abuse"),
            str(address).lower() if address else None,
            f"<{message_id}>" if message_id else None,
        )
    fields = _feedback_fields(mail)
    if fields is None:
        return None
    kind = (_FIELD.search(fields) or _FallbackMatch()).group(1).lower()
    from relay.channels.mail.bounces import original_message_id

    return Complaint(kind or "abuse", _recipient(mail, fields), original_message_id(mail))


class _FallbackMatch:
    def group(self, _: int) -> str:
        return "abuse"


def _feedback_fields(mail: Message) -> str | None:
    """The text of the feedback-report fields, or None when ``mail`` is not ARF."""
    report_type = str(mail.get_param("report-type", "", header="Content-Type") or "").lower()
    for part in mail.walk():
        if part.get_content_type() == "message/feedback-report":
            return part_text(part)
    if mail.get_content_type() == "multipart/report" and report_type == "feedback-report":
        return "\n".join(part_text(p) for p in mail.walk() if p.get_content_maintype() == "text")
    # A report whose fields travel as text: only when they look like ARF fields.
    if mail.get_content_type() in {"multipart/report", "multipart/mixed"}:
        for part in mail.walk():
            if part.get_content_type() == "text/plain":
                text = part_text(part)
                if _FIELD.search(text) and re.search(r"^user-agent:|^version:", text, re.I | re.M):
                    return text
    return None


def _recipient(mail: Message, fields: str) -> str | None:
    """``Original-Rcpt-To`` when given, else the ``To`` of the reported message."""
    from email.utils import getaddresses

    found = re.search(r"^original-rcpt-to:\s*(.+)$", fields, re.I | re.M)
    if found:
        named = _ADDRESS.search(found.group(1))
        if named:
            return named.group(0).lower()
    headers = attached_headers(mail)
    if headers is not None:
        for _, address in getaddresses([str(v) for v in headers.get_all("To", [])]):
            if _ADDRESS.fullmatch(address or ""):
                return address.lower()
    return None


