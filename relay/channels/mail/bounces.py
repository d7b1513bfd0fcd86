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
from dataclasses import dataclass, field
from email.message import Message

from relay.core.bounce_reasons import STATUS, BounceReason, classify, parse_status

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
    r"не доставлено|недоставлен|unable to deliver|message (not|could not be) delivered|"
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
    r"не может быть доставлено|не удалось доставить|no se ha podido entregar|"
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
_GAVE_UP = re.compile(
    r"permanent|gave up|giving up|given up|failed|could not be delivered|"
    r"will not be (retried|delivered)|has been (returned|bounced)|undeliverable",
    re.I,
)
_SMTP_REPLY = re.compile(r"(?<![\d.])([45])([0-5])(\d)(?=[ -]|$)", re.M)
_ADDRESS = re.compile(
    r"(?<![\w.+=/-])([a-z0-9!#$%&'*+/=?^_`{|}~.-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,})(?!\w)",
    re.I,
)
_MESSAGE_ID = re.compile(r"^\s*(?:x-)?(?:original-)?message-id:\s*(<[^>\s]+>)", re.I | re.M)
# Where the copy of the original message starts in a plain-text bounce.
_ORIGINAL_STARTS = re.compile(
    r"^.*(below this line is a copy|(here|this) is a copy of|copy of the message, including|"
    r"copy of (the|your) (original )?message (follows|below|is (attached|below|included))|"
    r"original message "
    r"(follows|headers)|message headers follow|returned message|unsent message below|"
    r"undelivered message|-{3,} ?(original message|message header|header of the original)|"
    r"included is a copy|headers of your message|your message reads|"
    r"^received: from|^return-path:).*$",
    re.I | re.M,
)
_NOT_A_RECIPIENT = re.compile(
    r"^(mailer[-_.]?daemon|post[-_.]?master|abuse|noc|hostmaster|root|mail[-_.]?delivery)@", re.I
)
#: The local-part prefix of a VERP return path: ``bounces+<token>@domain``.
VERP_PREFIX = "bounces+"
_VERP = re.compile(r"(?:^|[<\s,;:])" + re.escape(VERP_PREFIX) + r"([A-Za-z0-9_=+-]+)@", re.I)
_VERP_HEADERS = (
    "To",
    "Delivered-To",
    "X-Original-To",
    "Envelope-To",
    "X-Envelope-To",
    "X-Rcpt-To",
    "Original-Recipient",
)


@dataclass(frozen=True)
class Bounce:
    """What a bounce says: the message it is about, why, for whom, and whether for good."""

    original_message_id: str | None
    #: The address is dead (its reason is user or host unknown): mark it undeliverable.
    permanent: bool
    error: str
    #: A "still trying" warning (Action: delayed, or a plain-text delay notice), not a failure.
    delayed: bool = False
    #: A success report (Action: delivered/relayed/expanded), asked for by NOTIFY=SUCCESS.
    delivered: bool = False
    reason: BounceReason = BounceReason.OTHER
    recipients: tuple[str, ...] = field(default=())
    status: str | None = None

    @property
    def failed(self) -> bool:
        """A real failure (not a delay warning, not a success report)."""
        return not (self.delayed or self.delivered)


def verp_address(bounce_address: str, message_id: str) -> str:
    """The return path for one message: ``bounces+<token>@domain`` where the token is
    the local part of its Message-ID (``<token@relay>``); the domain is the one of
    ``bounce_address``. A bounce sent there names its message even when it quotes nothing."""
    token = message_id.strip().strip("<>").rpartition("@")[0] or message_id.strip("<>")
    token = re.sub(r"[^A-Za-z0-9_=+-]", "-", token)
    domain = bounce_address.rpartition("@")[2]
    return f"{VERP_PREFIX}{token}@{domain}"


def verp_message_id(mail: Message) -> str | None:
    """The Message-ID a VERP return path (in the bounce's recipient headers) names."""
    for header in _VERP_HEADERS:
        for value in mail.get_all(header, []):
            found = _VERP.search(str(value))
            if found:
                return f"<{found.group(1)}@relay>"
    return None


def parse_bounce(mail: Message) -> Bounce | None:
    """The bounce in ``mail``, or None when ``mail`` is not a bounce."""
    from relay.channels.mail.reports import ses_notification

    ses = ses_notification(mail)
    if ses is not None:
        return _from_ses(mail, ses)
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
    body = _report_text(mail)
    said = bool(_BOUNCE_BODY.search(body))
    coded = _has_original(mail) and bool(STATUS.search(body) or _SMTP_REPLY.search(body))
    if not machine_sender(mail):
        unprefixed = re.sub(r"^((re|aw|fw|fwd)\s*:\s*)+", "", subject, flags=re.I)
        return bool(_BOUNCE_SUBJECTS.match(unprefixed) or re.search(
            r"[:\s-](non remis|undeliverable|unzustellbar)$", subject, re.I)) and (said or coded)
    if _BOUNCE_SUBJECTS.search(subject) or _MACHINE_SUBJECTS.search(subject):
        return True
    # A mailer daemon returning a message is a bounce, in whatever language it explains it.
    return said or coded or (_has_original(mail) and _DAEMON_LOCAL.match(_from(mail)) is not None)


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
                return _field_groups(_decoded(part)) or groups
            return _field_groups(_decoded(part))
    return None


def _field_groups(text: str) -> list[Message]:
    """A delivery-status body the parser left as text: blank-line separated header blocks."""
    from email.parser import HeaderParser

    blocks = re.split(r"\r?\n\s*\r?\n", text.strip())
    return [HeaderParser().parsestr(block.strip() + "\n") for block in blocks if block.strip()]


def _address_field(value: object) -> str | None:
    """``rfc822; ana@x.com`` -> ``ana@x.com``."""
    text = str(value or "").split(";")[-1].strip().strip("<>").strip()
    found = _ADDRESS.search(text)
    return found.group(1).lower() if found else None


def _from_dsn(mail: Message, groups: list[Message]) -> Bounce:
    recipients = [
        g for g in groups if g.get("Action") or g.get("Status") or g.get("Final-Recipient")
    ]
    actions = [str(g.get("Action", "")).strip().lower() for g in recipients]
    failed = [g for g, a in zip(recipients, actions, strict=True) if a == "failed" or not a]
    body = _report_text(mail)
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
    addresses = _unique(
        _address_field(g.get("Original-Recipient")) or _address_field(g.get("Final-Recipient"))
        for g in chosen
    )
    if not addresses:
        addresses = _text_recipients(mail, body)
    first = chosen[0] if chosen else Message()
    # The first failed recipient decides (relay sends each message to one address).
    diagnostic = " ".join(str(first.get("Diagnostic-Code", "")).split())
    status = _status_field(first) or parse_status(diagnostic) or parse_status(body)
    if status and status.startswith("2"):
        status = parse_status(diagnostic) or status
    wording = diagnostic or _error_text(body) or str(mail.get("Subject", ""))
    reason = _staged(classify(status, wording, smtp_code=_smtp_code(diagnostic or body)), body)
    return _failure(mail, status, reason, addresses, diagnostic or _error_text(body))


def _from_ses(mail: Message, ses: dict[str, object]) -> Bounce | None:
    """An Amazon SES Bounce or Delivery notification (a Complaint is no bounce)."""
    kind = ses.get("notificationType")
    if kind == "Complaint":
        return None
    details = ses.get(str(kind).lower())
    info = details if isinstance(details, dict) else {}
    mail_info = ses.get("mail")
    sent = mail_info if isinstance(mail_info, dict) else {}
    message_id = f"<{sent['messageId']}>" if sent.get("messageId") else original_message_id(mail)
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
    addresses = _unique(
        _address_field(g.get("Original-Recipient")) or _address_field(g.get("Final-Recipient"))
        for g in groups
    )
    if not addresses:
        addresses = _text_recipients(mail, _report_text(mail))
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
    body = _report_text(mail)
    subject = str(mail.get("Subject", ""))
    if (_DELAY.search(body) or _DELAY.search(subject)) and not _GAVE_UP.search(
        _without_delay_words(body + "\n" + subject)
    ):
        return _report(mail, [], delayed=True)
    detail = _error_text(body)
    status = parse_status(detail) or parse_status(body)
    wording = detail or body[:2000] or subject
    reason = classify(status, wording, smtp_code=_smtp_code(detail or body))
    reason = _staged(reason, body)
    return _failure(mail, status, reason, _text_recipients(mail, body), detail)


_STAGE = re.compile(
    r"after (mail from|end of data|data|final data)\b|did not like our (final )?data|"
    r"in reply to (end of )?data|after the message was sent",
    re.I,
)


def _staged(reason: BounceReason, body: str) -> BounceReason:
    """A server that refused at MAIL FROM (our sender) or after DATA (the content, the
    recipient having been accepted) said nothing about the address being dead."""
    if reason.dead and _STAGE.search(body):
        return BounceReason.POLICY
    return reason


def _without_delay_words(text: str) -> str:
    """A delay warning often says "if delivery fails permanently you will be told": drop that."""
    return re.sub(r"(if|when)[^.\n]{0,80}(fail|permanent|give up)[^.\n]*", "", text, flags=re.I)


def _smtp_code(text: str) -> int | None:
    found = _SMTP_REPLY.search(text)
    return int("".join(found.groups())) if found else None


_HEADER_LINE = re.compile(r"^[A-Za-z][\w-]*:\s")
_BOILERPLATE = re.compile(
    r"this is a permanent error|(failed|failure) permanently|permanent (fatal )?(error|failure)s?|"
    r"technical details of|could not be delivered|couldn't be delivered|i've given up|"
    r"sorry it didn't work out|the following address(es)? failed|to one or more of its recipients",
    re.I,
)


def _error_text(body: str) -> str:
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
        answer = bool(STATUS.search(line) or _SMTP_REPLY.search(line)) and not _HEADER_LINE.match(
            line
        )
        if answer and taken and not _SMTP_REPLY.match(line[:4] + " "):
            break  # the next recipient's answer
        if answer and taken and not line[:3].isdigit():
            break
        if answer or (taken and line and not _ADDRESS.match(line)):
            taken.append(" ".join(line.split()))
        elif taken:
            break
        if len(taken) >= 4:
            break
    return " ".join(taken)


def _error_lines(body: str) -> str:
    lines = []
    for line in body.splitlines():
        stripped = " ".join(line.split())
        if not stripped or _HEADER_LINE.match(stripped):
            continue
        if STATUS.search(stripped) or _SMTP_REPLY.search(stripped) or re.search(
            r"unknown|not exist|no such|quota|full|blocked|spam|denied|rejected|refused|"
            r"invalid|disabled|suspended|expired|timed? ?out|too (large|big)|exceed|"
            r"не существует|нет такого|переполнен|error|failed|unavailable|unable",
            stripped,
            re.I,
        ):
            lines.append(stripped)
        if len(lines) >= 6:
            break
    return " ".join(lines)[:1500]


def _unique(addresses: object) -> list[str]:
    seen: dict[str, None] = {}
    for address in addresses:  # type: ignore[attr-defined]
        if address:
            seen.setdefault(address, None)
    return list(seen)


def _text_recipients(mail: Message, body: str) -> list[str]:
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
    found = _unique(
        _clean(a)
        for a in _ADDRESS.findall(report)
        if a.lower() not in ours | senders and not _NOT_A_RECIPIENT.match(a)
        and not a.lower().startswith(VERP_PREFIX)
    )
    if found:
        return found
    to = _unique(
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


def _original_headers(mail: Message) -> Message:
    """The headers of the returned message: its attached part, else the quoted header lines."""
    from email.parser import HeaderParser

    for part in mail.walk():
        kind = part.get_content_type()
        if kind == "message/rfc822":
            inner = part.get_payload()
            first = inner[0] if isinstance(inner, list) and inner else None
            if isinstance(first, Message):
                return first
        elif kind == "text/rfc822-headers":
            return HeaderParser().parsestr(_decoded(part))
    body = _report_text(mail)
    quoted = _ORIGINAL_STARTS.split(body, maxsplit=1)
    if len(quoted) > 1:
        block = re.sub(r"^[ \t]*>?[ \t]*", "", quoted[-1].lstrip("\n"), flags=re.M)
        return HeaderParser().parsestr(block.split("\n\n")[0] + "\n")
    return Message()


def _report_text(mail: Message) -> str:
    """The human-readable part of a report: its text parts, outside any attached message."""
    texts: list[str] = []
    _collect(mail, texts)
    return "\n".join(texts)


def _collect(part: Message, texts: list[str]) -> None:
    kind = part.get_content_type()
    if kind in {"message/rfc822", "text/rfc822-headers", "message/delivery-status"}:
        return
    if part.is_multipart():
        payload = part.get_payload()
        if isinstance(payload, list):
            for inner in payload:
                if isinstance(inner, Message):
                    _collect(inner, texts)
        return
    if kind in {"text/plain", "text/html"} or part.get_content_maintype() == "text":
        text = _decoded(part)
        if kind == "text/html":
            from relay.channels.mail.text import html_to_text

            text = html_to_text(text)
        texts.append(text)


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
    found = _MESSAGE_ID.search(_report_text(mail))
    if found:
        return found.group(1)
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
            found = _MESSAGE_ID.search(_decoded(part))
            if found:
                return found.group(1)
    return None


def _decoded(part: Message) -> str:
    payload = part.get_payload(decode=True)
    if isinstance(payload, bytes):
        charset = part.get_content_charset() or "utf-8"
        try:
            return payload.decode(charset, "replace")
        except LookupError:
            return payload.decode("utf-8", "replace")
    return str(part.get_payload())
