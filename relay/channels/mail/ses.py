"""Amazon SES notifications that arrive by mail (an SNS topic subscribed by email).

The body is JSON: ``notificationType`` Bounce (with ``bounceType``,
``bounceSubType`` and per-recipient ``status`` and ``diagnosticCode``),
Complaint or Delivery, and ``mail.messageId``. A bounce is read like any
other (its reason from the status and the diagnostic); a complaint is read
by :mod:`relay.channels.mail.reports`.
"""

from __future__ import annotations

from email.message import Message

from relay.channels.mail.bounce_record import Bounce
from relay.channels.mail.bounce_text import part_text
from relay.core.bounce_reasons import BounceReason, classify, parse_status


def ses_notification(mail: Message) -> dict[str, object] | None:
    """An Amazon SES notification forwarded by mail through SNS (a JSON body with
    ``notificationType`` Bounce, Complaint or Delivery), or None."""
    for part in mail.walk():
        if part.is_multipart():
            continue
        text = part_text(part)
        if "notificationType" in text:
            found = _notification(text)
            if found is not None:
                return found
    return None


def _notification(text: str) -> dict[str, object] | None:
    """The SES notification in ``text`` (perhaps wrapped in an SNS envelope), or None."""
    import json

    start = text.find('{"notificationType"')
    start = text.find("{") if start < 0 else start
    try:
        found = json.JSONDecoder(strict=False).raw_decode(text[max(start, 0) :])[0]
        if isinstance(found, dict) and isinstance(found.get("Message"), str):
            found = json.loads(found["Message"], strict=False)  # may hold a raw line break
    except ValueError:
        return None
    kinds = {"Bounce", "Complaint", "Delivery"}
    return found if isinstance(found, dict) and found.get("notificationType") in kinds else None


def ses_bounce(ses: dict[str, object], quoted_id: str | None) -> Bounce | None:
    """An Amazon SES Bounce or Delivery notification (a Complaint is no bounce)."""
    kind = ses.get("notificationType")
    if kind == "Complaint":
        return None
    details = ses.get(str(kind).lower())
    info = details if isinstance(details, dict) else {}
    mail_info = ses.get("mail")
    sent = mail_info if isinstance(mail_info, dict) else {}
    message_id = f"<{sent['messageId']}>" if sent.get("messageId") else quoted_id
    if kind == "Delivery":
        people = info.get("recipients") or []
        addresses = [str(a).lower() for a in people] if isinstance(people, list) else []
        return Bounce(message_id, False, f"delivered: {', '.join(addresses)}", delivered=True,
                      recipients=tuple(addresses))
    people = info.get("bouncedRecipients") or []
    rows = [p for p in people if isinstance(p, dict)] if isinstance(people, list) else []
    addresses = [str(p.get("emailAddress", "")).lower() for p in rows if p.get("emailAddress")]
    first = rows[0] if rows else {}
    diagnostic = str(first.get("diagnosticCode") or info.get("bounceSubType") or "")
    status = parse_status(str(first.get("status") or "")) or parse_status(diagnostic)
    if info.get("bounceType") == "Transient" and status is None:
        status = "4.0.0"
    reason = classify(status, f"{diagnostic} {info.get('bounceSubType', '')}")
    if info.get("bounceType") == "Transient" and reason.dead:
        reason = BounceReason.OTHER
    return Bounce(
        original_message_id=message_id,
        permanent=reason.dead,
        error=f"bounced ({reason.value}): {status or 'no status'}; {', '.join(addresses)}; "
        f"{diagnostic}"[:500],
        reason=reason,
        recipients=tuple(addresses),
        status=status,
    )
