"""Recognising bounces, why they bounced, for whom, and which of our messages they are about.

Standard bounces are RFC 3464 delivery status notifications: a
``multipart/report`` with a ``message/delivery-status`` part (per recipient
``Final-Recipient``, ``Action``, ``Status`` 5.x.x / 4.x.x,
``Diagnostic-Code``) and the original message or its headers. Many servers
still send their own formats (qmail's "failure notice", Exim's "Mail delivery
failed", Exchange's "Undeliverable:", DragonFly's ``MAILER-DAEMON <>``,
mail.ru in Russian, old Sendmail and Postfix texts, plain-text delay
warnings): those are recognised by who sent them (a mailer daemon, a null
return path) and what they say, and read for a status code, the failed
address and a quoted ``Message-ID``. The reason comes from
:mod:`relay.core.bounce_reasons`; only a dead address is ``permanent``.

The original ``Message-ID`` is how a bounce finds its outbound message; when
the report quotes nothing, the VERP return path it was sent to
(``bounces+<token>@...``, see :func:`verp_address`) names it.
"""

from __future__ import annotations

import re
from email.message import Message

from relay.channels.mail.bounce_record import Bounce
from relay.channels.mail.bounce_text import (
    ADDRESS,
    SMTP_REPLY,
    decoded,
    error_text,
    report_text,
    text_recipients,
    unique,
)
from relay.core.bounce_reasons import STATUS, BounceReason, classify, parse_status, says_nothing
from relay.core.smtp_steps import refused_at

_DAEMON_LOCAL = re.compile(
    r"^(mailer[-_.]?daemon|post[-_.]?master|mail[-_.]?daemon|mail[-_.]?delivery[-_.]?(system|subsystem)?|"
    r"mail[-_.]?administrator|mail[-_.]?system|mail[-_.]?router|mailer|bounces?|"
    r"no[-_.]?reply[-_.]?bounce|smtp[-_.]?gateway|mdaemon|nobody|\w*smtp[-_]?mail[-_]?service|"
    r"\w*antivirus\w*|system[-_. ]?administrator|\"system administrator\")([+@]|$)",
    re.I,
)
_DAEMON_NAME = re.compile(
    r"mail(er)?[- ]?daemon|mail delivery (system|subsystem|service)|postmaster|"
    r"mail administrator|delivery (status )?notification|mail system",
    re.I,
)
_BOUNCE_SUBJECTS = re.compile(
    r"undeliver(able|ed)|deliver(y|ies) (status notification|failure|has failed|failed|problem|"
    r"report|notification)|mail delivery (failed|failure|subsystem|system|problem)|"
    r"returned mail|returned to sender|failure notice|could not be delivered|"
    r"delivery (to the following|failure)|non[- ]?delivery|nondeliverable|"
    r"unzustellbar|nicht zustellbar|non remis|non recapitabile|no se puede entregar|"
    r"no entregado|não entregue|onbestelbaar|kan inte levereras|"
    r"не доставлено|недоставлен|メールエラー|配信エラー|エラー通知|不達|"
    r"unable to deliver|message (not|could not be) delivered|"
    r"delayed mail|delivery (is )?delayed|warning: could not send|"
    r"mail could not be delivered|error sending message|rejected|bounced?",
    re.I,
)
#: A subject a mail system writes, read only when the sender is a mail system.
_MACHINE_SUBJECTS = re.compile(
    r"\bfail(ed|ure|ing)?\b|\berror\b|warning|returned|returning|not delivered|undeliver|"
    r"user unknown|delivery|nicht zugestellt|non remis|no entregado",
    re.I,
)
_BOUNCE_BODY = re.compile(
    r"could not be delivered|couldn't be delivered|was not delivered|wasn't delivered|"
    r"(not|wasn't|was not) able to deliver|unable to deliver|undeliverable|"
    r"delivery (to the following recipients?|has) failed|failed to deliver|"
    r"following (address(es)?|recipients?) (failed|could not|was|were)|"
    r"permanent (error|failure|fatal)|permanently failed|error delivering|"
    r"message (you sent )?could not|i'm afraid i wasn't able|sorry,? (we|i) (were|was) unable|"
    r"did not reach (the following|its destination)|delivery (status notification|failure)|"
    r"(has|have) not (yet )?been delivered|delivery (attempts?|is) (delayed|will continue)|"
    r"will (continue|keep) (to try|trying)|still (trying|retrying)|"
    r"returned to (the )?sender|transcript of session|"
    r"не может быть доставлено|не удалось доставить|送信できませんでした|配信できませんでした|"
    r"no se ha podido entregar|"
    r"konnte nicht zugestellt|n'a pas pu être remis|non è stato possibile",
    re.I,
)
_DELAY = re.compile(
    r"delivery (has been |is )?delayed|(has|have) not (yet )?been delivered|"
    r"will (continue|keep) (to try|trying|retrying)|still (trying|retrying|being retried)|"
    r"warning: (message|could not send)|delayed mail|delivery delay|"
    r"no action is required on your part|will be retried|retry (until|for)|"
    r"(will|would) try (again|to deliver)",
    re.I,
)
#: A mail system saying the address itself failed, in words no out-of-office uses.
_FAILED_ADDRESS = re.compile(
    r"no such (user|mailbox|recipient|address)|user unknown|unknown (user|recipient)|"
    r"not a valid (user|recipient|mailbox)|invalid (user|recipient) address",
    re.I,
)
_GAVE_UP = re.compile(
    r"permanent|gave up|giving up|given up|failed|could not be delivered|"
    r"will not be (retried|delivered)|has been (returned|bounced)|undeliverable",
    re.I,
)
_MESSAGE_ID = re.compile(r"^\s*(?:x-)?(?:original-)?message-id:\s*(<[^>\s]+>)", re.I | re.M)


def parse_bounce(mail: Message) -> Bounce | None:
    """The bounce in ``mail``, or None when ``mail`` is not a bounce."""
    from relay.channels.mail.ses import ses_bounce, ses_notification

    ses = ses_notification(mail)
    if ses is not None:
        return ses_bounce(ses, original_message_id(mail))
    groups = _delivery_status(mail)
    if groups is not None:
        return _from_dsn(mail, groups)
    if looks_like_bounce(mail):
        return _from_text(mail)
    return None


def machine_sender(mail: Message) -> bool:
    """Sent by a mail system rather than a person: a mailer daemon or a null return path."""
    from email.utils import parseaddr

    name, sender = parseaddr(str(mail.get("From", "")))
    raw_from = str(mail.get("From", ""))
    return_path = str(mail.get("Return-Path", "")).strip()
    if "Return-Path" in mail and return_path in {"<>", ""}:
        return True
    if _DAEMON_LOCAL.match(parseaddr(return_path)[1]):
        return True
    if "<>" in raw_from.replace(" ", "") or (not sender and "daemon" in raw_from.lower()):
        return True  # "MAILER-DAEMON <>": the null sender written in From
    return bool(_DAEMON_LOCAL.match(sender)) or bool(_DAEMON_NAME.search(name))


def _from(mail: Message) -> str:
    from email.utils import parseaddr

    return parseaddr(str(mail.get("From", "")))[1]


def looks_like_bounce(mail: Message) -> bool:
    """A non-standard bounce: a mail system writing about a delivery that failed or waits
    (or anyone whose subject and text are a bounce's: gateways send them from any address)."""
    subject = " ".join(str(mail.get("Subject", "")).split())
    body = report_text(mail)
    said = bool(_BOUNCE_BODY.search(body))
    coded = _has_original(mail) and bool(STATUS.search(body) or SMTP_REPLY.search(body))
    if not machine_sender(mail):
        unprefixed = re.sub(r"^((re|aw|fw|fwd)\s*:\s*)+", "", subject, flags=re.I)
        return bool(_BOUNCE_SUBJECTS.match(unprefixed) or re.search(
            r"[:\s-](non remis|undeliverable|unzustellbar)$", subject, re.I)) and (said or coded)
    if _BOUNCE_SUBJECTS.search(subject) or _MACHINE_SUBJECTS.search(subject):
        return True
    # A mailer daemon returning a message is a bounce, in whatever language it explains it.
    returned = _has_original(mail) and _DAEMON_LOCAL.match(_from(mail)) is not None
    return said or coded or returned or bool(_FAILED_ADDRESS.search(body))


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
                groups = [p for p in payload if isinstance(p, Message)]
                if any(g.get("Action") or g.get("Status") for g in groups):
                    return groups
                return _field_groups(decoded(part)) or groups
            return _field_groups(decoded(part))
    return None


def _field_groups(text: str) -> list[Message]:
    """A delivery-status body the parser left as text: blank-line separated header blocks."""
    from email.parser import HeaderParser

    blocks = re.split(r"\r?\n\s*\r?\n", text.strip())
    return [HeaderParser().parsestr(block.strip() + "\n") for block in blocks if block.strip()]


def _address_field(value: object) -> str | None:
    """``rfc822; ana@x.com`` -> ``ana@x.com``."""
    text = str(value or "").split(";")[-1].strip().strip("<>").strip()
    found = ADDRESS.search(text)
    return found.group(1).lower() if found else None


def _from_dsn(mail: Message, groups: list[Message]) -> Bounce:
    recipients = [
        g for g in groups if g.get("Action") or g.get("Status") or g.get("Final-Recipient")
    ]
    actions = [str(g.get("Action", "")).strip().lower() for g in recipients]
    failed = [g for g, a in zip(recipients, actions, strict=True) if a == "failed" or not a]
    body = report_text(mail)
    success = {"delivered", "relayed", "expanded", "deliverable"}
    statuses = [parse_status(str(g.get("Status", ""))) or "" for g in recipients]
    pairs = zip(actions, statuses, strict=True)
    if recipients and all(a in success or (not a and st.startswith("2")) for a, st in pairs):
        return _report(mail, recipients, delivered=True)
    if not failed and any(a == "delayed" for a in actions):
        return _report(mail, recipients, delayed=True)
    if not failed and not recipients and _DELAY.search(body) and not _GAVE_UP.search(body):
        return _report(mail, [], delayed=True)
    chosen = failed or recipients
    # The address we wrote (Original-Recipient) over the one a forward led to (Final-Recipient).
    addresses = unique(
        _address_field(g.get("Original-Recipient")) or _address_field(g.get("Final-Recipient"))
        for g in chosen
    )
    if not addresses:
        addresses = text_recipients(mail, body)
    first = chosen[0] if chosen else Message()
    # The first failed recipient decides (relay sends each message to one address).
    diagnostic = " ".join(str(first.get("Diagnostic-Code", "")).split())
    status = _status_field(first) or parse_status(diagnostic) or parse_status(body)
    if status and status.startswith("2"):
        status = parse_status(diagnostic) or status
    wording = diagnostic or error_text(body) or str(mail.get("Subject", ""))
    reason = classify(status, wording, smtp_code=_smtp_code(diagnostic or body),
                      command=refused_at(f"{diagnostic}\n{body}"))
    if reason is BounceReason.OTHER and says_nothing(wording):
        reason = _from_report_lines(status, body, reason)
    return _failure(mail, status, reason, addresses, diagnostic or error_text(body))


def _status_field(group: Message) -> str | None:
    status = parse_status(str(group.get("Status", "")))
    if status and status.endswith(".0.0"):
        # "5.0.0" is the generic "something failed": a code in the diagnostic is more precise.
        better = parse_status(str(group.get("Diagnostic-Code", "")))
        if better and better[0] == status[0]:
            return better
    return status


def _report(
    mail: Message, groups: list[Message], *, delivered: bool = False, delayed: bool = False
) -> Bounce:
    addresses = unique(
        _address_field(g.get("Original-Recipient")) or _address_field(g.get("Final-Recipient"))
        for g in groups
    )
    if not addresses:
        addresses = text_recipients(mail, report_text(mail))
    status = next((parse_status(str(g.get("Status", ""))) for g in groups if g.get("Status")), None)
    what = "delivered" if delivered else "delayed"
    return Bounce(
        original_message_id=original_message_id(mail),
        permanent=False,
        error=f"{what}: {', '.join(addresses) or 'recipient not named'}"[:500],
        delayed=delayed,
        delivered=delivered,
        reason=BounceReason.EXPIRED if delayed else BounceReason.OTHER,
        recipients=tuple(addresses),
        status=status,
    )


def _failure(
    mail: Message,
    status: str | None,
    reason: BounceReason,
    addresses: list[str],
    detail: str,
) -> Bounce:
    error = "; ".join(
        bit
        for bit in (f"bounced ({reason.value}): {status or 'no status'}", ", ".join(addresses),
                    detail)
        if bit
    )
    return Bounce(
        original_message_id=original_message_id(mail),
        permanent=reason.dead,
        error=error[:500],
        reason=reason,
        recipients=tuple(addresses),
        status=status,
    )


def _from_text(mail: Message) -> Bounce:
    body = report_text(mail)
    subject = str(mail.get("Subject", ""))
    if (_DELAY.search(body) or _DELAY.search(subject)) and not _GAVE_UP.search(
        _without_delay_words(body + "\n" + subject)
    ):
        return _report(mail, [], delayed=True)
    detail = error_text(body)
    status = parse_status(detail) or parse_status(body)
    wording = detail or body[:2000] or subject
    reason = classify(status, wording, smtp_code=_smtp_code(detail or body),
                      command=refused_at(body))
    if reason is BounceReason.OTHER and says_nothing(wording):
        reason = _from_report_lines(status, body, reason)
    return _failure(mail, status, reason, text_recipients(mail, body), detail)


def _from_report_lines(status: str | None, body: str, reason: BounceReason) -> BounceReason:
    """When the server's answer names no reason ("554 Service unavailable"), the report's
    other error lines may (a local delivery agent's "unknown user" just above it)."""
    from relay.channels.mail.bounce_text import error_lines

    lines = error_lines(body)
    return classify(status, lines, command=refused_at(body)) if lines else reason


def _without_delay_words(text: str) -> str:
    """A delay warning often says "if delivery fails permanently you will be told": drop that."""
    return re.sub(r"(if|when)[^.\n]{0,80}(fail|permanent|give up)[^.\n]*", "", text, flags=re.I)


def _smtp_code(text: str) -> int | None:
    found = SMTP_REPLY.search(text)
    return int("".join(found.groups())) if found else None


def original_message_id(mail: Message) -> str | None:
    """The Message-ID of the bounced mail: from the returned message or headers part,
    an ``Original-Message-ID`` / ``X-Original-Message-ID`` field, a quoted header
    line, or the VERP return path the bounce was sent to."""
    attached = _attached_message_id(mail)
    if attached:
        return attached
    for header in ("Original-Message-ID", "X-Original-Message-ID"):
        if mail.get(header):
            return str(mail[header]).strip()
    found = _MESSAGE_ID.search(report_text(mail))
    if found:
        return found.group(1)
    from relay.channels.mail.verp import verp_message_id

    return verp_message_id(mail)


def _attached_message_id(mail: Message) -> str | None:
    """The Message-ID of the returned message or headers part, if any."""
    for part in mail.walk():
        kind = part.get_content_type()
        if kind == "message/rfc822":
            inner = part.get_payload()
            first = inner[0] if isinstance(inner, list) and inner else None
            if isinstance(first, Message) and first.get("Message-ID"):
                return str(first["Message-ID"]).strip()
        elif kind == "text/rfc822-headers":
            found = _MESSAGE_ID.search(decoded(part))
            if found:
                return found.group(1)
    return None

