"""Why a message bounced, from its status code and its wording, and whether that kills the address.

A bounce says why in two ways: an enhanced status code (RFC 3463: ``5.1.1``
bad mailbox, ``5.2.2`` mailbox full, ``5.7.1`` delivery not authorized...)
and the receiving server's own sentence ("User unknown", "Mailbox quota
exceeded", "blocked using zen.spamhaus.org"). Servers are careless with the
code (many answer ``5.0.0`` or ``5.7.1`` for everything, some ``5.1.1`` for a
spam block), so a specific sentence wins over the code, and the code decides
when the sentence says nothing specific.

Only two reasons mean the address is dead: the mailbox does not exist
(``user_unknown``) or its domain cannot receive mail (``host_unknown``). A
full mailbox, a spam or policy block, a rate limit, a suspended account, an
expired retry or an authentication failure is about this message or this
sender, not about the address: relay fails the message and tells the
conversation, and marks the address only when such bounces keep coming.
Standard library only: used by the mail channel and by ``relay inspect``.
"""

from __future__ import annotations

import re
from enum import StrEnum


class BounceReason(StrEnum):
    USER_UNKNOWN = "user_unknown"
    HOST_UNKNOWN = "host_unknown"
    MAILBOX_FULL = "mailbox_full"
    TOO_BIG = "message_too_big"
    POLICY = "policy"
    SPAM = "spam"
    RATE_LIMITED = "rate_limited"
    SUSPENDED = "suspended"
    EXPIRED = "expired"
    AUTHENTICATION = "authentication"
    OTHER = "other"

    def __str__(self) -> str:
        return self.value

    @property
    def dead(self) -> bool:
        """True when the address itself will never receive mail."""
        return self in (BounceReason.USER_UNKNOWN, BounceReason.HOST_UNKNOWN)


_OUR_SIDE_WORDS = (
        r"sender (address|domain)|domain of sender|sender .{0,20}(rejected|denied|refused|invalid|"
        r"not (allowed|verified))|after (end of )?data|in reply to (end of )?data|final data|"
        r"after the data|"
        r"after mail from|not verified|open relay|relay(ing)? (denied|not (permitted|allowed))|"
        r"unable to relay|relay access denied|we do not relay|my name was rejected|\b(helo|ehlo)\b"
)
_OUR_SIDE = re.compile(_OUR_SIDE_WORDS, re.I)
#: The recipient (or their provider on their behalf) chose not to take mail from us.
_RECIPIENT_CHOICE_WORDS = (
    r"recipient('s)? (preferences|settings)|"
    r"(rejected|blocked|refused) by (the )?recipient\b(?! (domain|server|system|host))|"
    r"recipient (is only accepting|refuses|has blocked)|user refuses|message rejected due to user"
)

# Ordered: the first wording that matches decides. Specific causes that are not
# about the address (spam, authentication, rate, quota, size, suspension) come
# before "unknown user", because rejections often say both ("550 5.1.1 ...
# rejected: sender blocked, see spamhaus" is a block, not a dead mailbox).
_WORDING: tuple[tuple[BounceReason, str], ...] = (
    (BounceReason.POLICY, _RECIPIENT_CHOICE_WORDS),
    (
        BounceReason.AUTHENTICATION,
        r"\bspf\b|\bdkim\b|\bdmarc\b|sender policy framework|not authenticated|"
        r"authentication (failed|required|failure)|unauthenticated|fails? (spf|dkim|dmarc)|"
        r"\bptr\b|reverse dns|rdns|reverse (lookup|hostname)|no (ptr|reverse)|"
        r"(does not|doesn't) (resolve|have a ptr)|unresolvable|client host .* (rejected|refused)|"
        r"\bstarttls\b|\btls (is )?required|must issue a starttls|encryption required",
    ),
    (
        BounceReason.SPAM,
        r"\bspam|junk mail|\bubel?\b|\bblacklist|\bblocklist|\bdnsbl|\brbl\b|spamhaus|spamcop|"
        r"barracuda ?(central|reputation)|sorbs|(?<!not )listed (at|on|in|by) (?!the )|reputation|"
        r"content (was )?(rejected|filter)|message content|virus|malware|infected|"
        r"suspicious|bulk mail|phish",
    ),
    (
        BounceReason.RATE_LIMITED,
        r"rate limit|too many (messages|emails|mails|connections|recipients|concurrent)|"
        r"(sending|receiving|delivery) (rate|limit)|rate of |throttl|try (again )?later|"
        r"temporarily deferred|exceeded .*(limit|quota) .*(sending|send|per )|"
        r"too much mail|unusual rate|connection limit|slow down|at a rate that",
    ),
    (
        BounceReason.MAILBOX_FULL,
        r"(mail ?box|mail ?folder|inbox|account|user|recipient|disk|storage)[^.\n]{0,30}"
        r"(is |was )?(full|over ?quota|exceeded|out of (space|storage))|"
        r"over ?quota|quota (exceeded|exceed|full)|exceeded (the )?(storage|quota)|"
        r"insufficient (disk |system )?(space|storage)|not enough (space|storage)|"
        r"mailbox size limit|(too|over) (much|large) (mail|data)|"
        r"ящик переполнен|превышен|メールボックスが一杯|容量(?:を)?超過",
    ),
    (
        BounceReason.TOO_BIG,
        r"(message|mail|e-?mail) (is )?(too (large|big|long)|size (exceeds|limit))|"
        r"(message|size) exceeds|exceeds? (the )?(maximum|max|size|message size)|"
        r"message length exceeds|size limit|too large|(message )?size (limit )?exceeded",
    ),
    (
        BounceReason.SUSPENDED,
        r"(account|mailbox|user|address|recipient)[^.\n]{0,40}"
        r"(suspended|disabled|deactivated|inactive|locked|blocked|expired|closed|on hold|frozen)|"
        r"suspended|deactivated|inactive (user|account|mailbox)|mailbox (is )?disabled",
    ),
    (
        # About our side, not the recipient: our sender address or domain was refused, or
        # the recipient was accepted and the content refused after DATA (a filter).
        BounceReason.POLICY,
        _OUR_SIDE_WORDS,
    ),
    (
        BounceReason.HOST_UNKNOWN,
        r"host (or domain name )?(not found|unknown)|unknown host|"
        r"host [\w.-]+\.[a-z]{2,} not found|indicated no smtp service|"
        r"domain (name )?(not found|unknown|"
        r"does not exist|doesn't exist)|no (such )?(domain|host)\b|"
        r"host not found|name or service not known|nxdomain|"
        r"(no|null) mx\b|no mail (exchanger|server|host)|"
        r"unrout\w*able (mail )?(domain|address)|domain (is )?unroutable|"
        r"(does not|doesn't) (accept|receive) (e-?)?mail|accepts no mail|nullmx|"
        r"(unknown|invalid|non-?existent) domain|bad destination system|illegal host",
    ),
    (
        BounceReason.USER_UNKNOWN,
        r"(user|mailbox|recipient|address|account|addressee|local[- ]part|alias|person|userid|"
        r"user id)[^.\n:;]{0,20}"
        r"(unknown|not found|does not exist|doesn't exist|not exist|no longer|invalid|"
        r"not valid|unavailable|not (a )?(known|recognized|recognised|listed|registered)|"
        r"(was |has been )?(removed|deleted)|is not|isn't|unrouteable|unroutable)|"
        r"no (such|valid) (user|mailbox|recipient|address|account|person|local)|"
        r"(unknown|invalid|bad|illegal|nonexist\w*|non-existent)[ _]"
        r"(user|mailbox|recipient|address|account|local|destination|e-?mail)|"
        r"(user|recipient|mailbox|address|account)s? (?:is |are )?(?:not (?:here|local))|"
        r"not (a )?(valid|known) (user|recipient|mailbox|address)|undeliverable address|"
        r"mailbox unavailable|no mail ?box|not our (customer|user)|unknown or illegal alias|"
        r"invalid .{0,20}userid|"
        r"has moved|no longer (active|available|valid|in use|with|works|work)|"
        r"address (couldn't|could not|cannot|can't) be found|address not found|"
        r"recipient address rejected: access denied|"  # Microsoft 365: not in the directory
        r"does not exist|doesn't exist|not listed in|unknown user|user unknown|"
        r"no such (user|mailbox|recipient|address|account|person|local|addressee)|"
        r"is not a valid mailbox|(not|n't) have an? (\S+ )?(account|mailbox)|"
        r"нет такого|не существует|не найден|no existe|n'existe pas|inexistant|"
        r"unbekannt|existiert nicht|nicht vorhanden|sconosciuto|inesistente|"
        r"desconhecido|não existe",
    ),
    (
        BounceReason.POLICY,
        r"\bpolicy|block(ed|ing)?\b|denied|refused|reject|prohibited|not (allowed|permitted|"
        r"authori[sz]ed)|unauthori[sz]ed|relay(ing)? (denied|not permitted|access)|"
        r"not accepted|filter|forbidden|banned|security|restricted|access (denied|not allowed)|"
        r"administrative prohibition",
    ),
    (
        BounceReason.EXPIRED,
        r"expired|retry time|timed? ?out|timeout|gave up|giving up|too long|"
        r"could not be delivered within|(has|have) not (yet )?been delivered|"
        r"undeliverable for \d+|unable to deliver .* (for|within) \d+|"
        r"delivery (has been )?delayed|still (trying|retrying)|"
        r"will (continue|keep) (trying|to try)|"
        r"connection (refused|timed out|lost|reset)|servfail|"
        r"malformed or unexpected|malformed name|"  # a domain's broken DNS: its admin can fix it
        r"temporary failure in name resolution|could not connect|"
        r"unable to connect|no route to host|network (error|is unreachable)|dns (error|failure)|"
        r"lookup of .* (failed|responded)",
    ),
)
_WORDINGS = tuple((reason, re.compile(pattern, re.I)) for reason, pattern in _WORDING)

# RFC 3463: subject.detail -> reason. The class (2, 4, 5) is read separately.
_BY_CODE = {
    "1.0": BounceReason.USER_UNKNOWN,  # other address status ("#5.1.0 Address rejected")
    "1.1": BounceReason.USER_UNKNOWN,  # bad destination mailbox address
    "1.2": BounceReason.HOST_UNKNOWN,  # bad destination system address
    "1.3": BounceReason.USER_UNKNOWN,  # bad destination mailbox address syntax
    "1.4": BounceReason.OTHER,  # destination mailbox address ambiguous
    "1.6": BounceReason.USER_UNKNOWN,  # destination mailbox has moved
    "1.10": BounceReason.HOST_UNKNOWN,  # RFC 7505: null MX
    "1.7": BounceReason.POLICY,  # bad sender's mailbox address syntax
    "1.8": BounceReason.POLICY,  # bad sender's system address
    "2.1": BounceReason.SUSPENDED,  # mailbox disabled, not accepting messages
    "2.2": BounceReason.MAILBOX_FULL,
    "2.3": BounceReason.TOO_BIG,  # message length exceeds administrative limit
    "3.1": BounceReason.MAILBOX_FULL,  # mail system full
    "3.4": BounceReason.TOO_BIG,
    "4.1": BounceReason.EXPIRED,  # no answer from host
    "4.2": BounceReason.EXPIRED,  # bad connection
    "4.4": BounceReason.HOST_UNKNOWN,  # unable to route
    "4.6": BounceReason.OTHER,  # routing loop
    "4.7": BounceReason.EXPIRED,  # delivery time expired
    "7.0": BounceReason.POLICY,
    "7.1": BounceReason.POLICY,  # delivery not authorized, message refused
    "7.7": BounceReason.POLICY,
    "7.23": BounceReason.AUTHENTICATION,  # SPF validation failed
    "7.24": BounceReason.AUTHENTICATION,
    "7.25": BounceReason.AUTHENTICATION,  # reverse DNS validation failed
    "7.26": BounceReason.AUTHENTICATION,  # multiple authentication checks failed
    "7.27": BounceReason.HOST_UNKNOWN,  # sender address has null MX
    "7.28": BounceReason.RATE_LIMITED,  # mail flood detected
    "7.5": BounceReason.AUTHENTICATION,
    "7.8": BounceReason.AUTHENTICATION,
    "7.9": BounceReason.AUTHENTICATION,
    "7.10": BounceReason.AUTHENTICATION,
    "7.11": BounceReason.AUTHENTICATION,
    "7.13": BounceReason.SUSPENDED,  # user account disabled
    "7.14": BounceReason.POLICY,  # trust relationship required
    "7.15": BounceReason.AUTHENTICATION,  # priority level too low
    "7.16": BounceReason.TOO_BIG,
    "7.17": BounceReason.USER_UNKNOWN,  # mailbox owner has changed
    "7.18": BounceReason.USER_UNKNOWN,  # domain owner has changed
    "4.5": BounceReason.RATE_LIMITED,  # mail system congestion
    "3.2": BounceReason.RATE_LIMITED,  # system not accepting network messages (5.3.2: below)
    "6.0": BounceReason.POLICY,  # media not supported / content
}
_NULL_MX = re.compile(r"null mx|nullmx|(does not|doesn't) (accept|receive) (e-?)?mail", re.I)
STATUS = re.compile(r"(?<![\d.])([245])\.(\d{1,3})\.(\d{1,3})(?![\d.]*\d)")


def parse_status(text: str) -> str | None:
    """The first RFC 3463 status (``5.1.1``) in ``text``, or None."""
    found = STATUS.search(text or "")
    return ".".join(found.groups()) if found else None


def by_wording(text: str) -> BounceReason | None:
    """The reason a server's sentence names, or None when it names none we know."""
    for reason, pattern in _WORDINGS:
        if pattern.search(text):
            return reason
    return None


def says_nothing(text: str) -> bool:
    """The server's answer names no reason ("554 Service unavailable"), and is no local
    program's failure: other lines of the report may say more."""
    return by_wording(text) is None and not _LOCAL_PROGRAM.search(text)


def by_status(status: str | None) -> BounceReason | None:
    """The reason an enhanced status code names (RFC 3463), or None for a generic one."""
    if not status:
        return None
    if status == "5.3.2":
        return BounceReason.HOST_UNKNOWN  # a host that will never take network mail
    _, _, rest = status.partition(".")
    return _BY_CODE.get(rest)


#: Amazon SES writes its own description of the status before the answer it was given.
_RELAYED = re.compile(r"\b[245]\.\d{1,3}\.\d{1,3} - [^'\n]{0,80}?\b[45]\d\d[- ]'(?P<said>[^']+)'")
#: "550 : User unknown": a refusal that names no recipient answered for the whole message
#: (after DATA), the way some carriers word a recipient's filter.
_NO_RECIPIENT = re.compile(r"\b[45]\d\d\s*:?\s+:\s*(user unknown|unknown user)", re.I)
#: A sentence that states the account is missing (Yahoo refuses unknown users this way
#: after DATA), unlike a bare "User unknown", which filters also answer.
_FINDING = re.compile(r"(doesn't|does not) have an? [\w.-]+ account|"
                      r"account (that )?you tried to reach does not exist", re.I)
#: A local delivery program failed (RFC 3464 diagnostic type ``x-unix``): a mailer error.
_LOCAL_PROGRAM = re.compile(r"^\W*x-unix\s*;", re.I)
#: "may not exist or you may not have permission": a guess, not a server's finding.
_HEDGED = re.compile(r"\bmay not exist|might not exist|möglicherweise nicht|il se peut|"
                     r"puede que no exist|pode não existir", re.I)


def classify(
    status: str | None, text: str, *, smtp_code: int | None = None, command: str | None = None
) -> BounceReason:
    """The reason of one failed delivery: the diagnostic's wording first, then its status.

    A status that names a dead address (``5.1.1``) is trusted over a generic
    wording such as "rejected" or "denied" (which only says a server said no);
    a specific wording (quota, spam, rate, suspension) wins over any code.
    ``command`` (:func:`relay.core.smtp_steps.refused_at`) is the SMTP step refused.
    """
    relayed = _RELAYED.search(text)
    if relayed:  # "5.1.0 - Unknown address error 550-'...'": the quoted answer is the server's
        text = relayed.group("said")
        status = parse_status(text) or status
    reason = _classify(status, text, smtp_code)
    if not reason.dead:
        return reason
    return _dead_or_not(reason, status, text, command)


def _dead_or_not(
    reason: BounceReason, status: str | None, text: str, command: str | None
) -> BounceReason:
    """A dead reading stands only when nothing in the bounce contradicts it.

    Marking a live address dead shuts a person out for good, while a missed
    mark costs one more soft bounce (and repeated soft bounces escalate), so a
    bounce whose parts disagree is read the live way: a refusal of our sender
    or our message (MAIL FROM, HELO, after DATA, "550 : User unknown"), a
    status code about the mailbox or the system rather than the address
    (``5.2.x``, ``5.3.x``, ``5.7.x``) not said at RCPT TO, a local program's
    failure, a hedged "may not exist".
    """
    subject = status.split(".")[1] if status else ""
    if command in ("MAIL", "HELO") or _NO_RECIPIENT.search(text):
        return BounceReason.POLICY
    if command == "DATA" and subject != "1" and not _FINDING.search(text):
        return BounceReason.POLICY  # no code about the address: a filter's answer
    if _LOCAL_PROGRAM.search(text):
        return BounceReason.OTHER
    if _HEDGED.search(text):
        return BounceReason.POLICY
    if reason is BounceReason.USER_UNKNOWN and subject in ("2", "3", "7") and command != "RCPT":
        coded = by_status(status)
        return coded if coded is not None and not coded.dead else BounceReason.OTHER
    return reason


def _classify(status: str | None, text: str, smtp_code: int | None) -> BounceReason:
    said = by_wording(text)
    coded = by_status(status)
    decided = _override(status, said, coded, text)
    if decided is not None:
        return decided
    if said in (BounceReason.POLICY, BounceReason.EXPIRED, None) and coded is not None:
        if coded is BounceReason.HOST_UNKNOWN and said is BounceReason.EXPIRED:
            return said  # 4.4.x with "timed out": a connection problem, not a missing domain
        return coded
    if said is not None:
        return said
    return _by_reply_code(smtp_code, status)


def _override(
    status: str | None, said: BounceReason | None, coded: BounceReason | None, text: str
) -> BounceReason | None:
    """The cases where one side decides whatever the other says."""
    transient = bool(status and status.startswith("4"))
    if transient and BounceReason.HOST_UNKNOWN in (said, coded) and not _NULL_MX.search(text):
        return BounceReason.EXPIRED  # a DNS failure the server will retry: not a missing domain
    if coded is BounceReason.POLICY and status and status.split(".")[1] == "1":
        return coded  # X.1.7 / X.1.8: our sender address was refused
    if said is BounceReason.POLICY and re.search(f"{_OUR_SIDE_WORDS}|{_RECIPIENT_CHOICE_WORDS}",
                                                 text, re.I):
        return said  # our sender or our content was refused, whatever the code says
    if said is BounceReason.USER_UNKNOWN and coded is BounceReason.HOST_UNKNOWN:
        # 5.1.10 is a null MX (RFC 7505), but Microsoft 365 answers it for a missing recipient
        return said if status and status.endswith(".1.10") else coded
    return None


def _by_reply_code(smtp_code: int | None, status: str | None) -> BounceReason:
    """A bare SMTP reply code, when nothing else says why."""
    if smtp_code == 551 and status is None:
        return BounceReason.USER_UNKNOWN  # "user not local"
    if smtp_code == 552:
        return BounceReason.MAILBOX_FULL
    return BounceReason.OTHER
