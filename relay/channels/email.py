"""Email: SMTP out, IMAP in, for contacts whose address is an email address.

SMTP has no idempotency header, so the key becomes the ``Message-ID``
(``<key@relay>``): a retry after a lost "250 OK" produces a message with the
same id, which mail clients and filters treat as a duplicate. That id is what
``send`` returns, and what a contact's reply names in ``In-Reply-To``.

``poll`` reads the IMAP mailbox (``imap_host``) after the cursor the store
keeps, and turns each mail into a reply, an auto-reply, an unsubscribe or a
bounce receipt (see :mod:`relay.channels.mail`). Without ``imap_host`` the
channel only sends.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from relay.channels.base import (
    ChannelError,
    Inbound,
    Incoming,
    Outbound,
    PermanentChannelError,
    Receipt,
    Rejected,
    secret_from_env,
    setting_flag,
    setting_required,
    setting_seconds,
)
from relay.channels.fate import Fate, Reconciled
from relay.channels.mail.outbound import DEFAULT_SUBJECT, Identity, build_email, message_id_for
from relay.core.errors import ConfigError

if TYPE_CHECKING:
    import smtplib
    from email.message import EmailMessage

    from relay.channels.mail.imap import ImapPoller

__all__ = ["DEFAULT_SUBJECT", "EmailChannel", "ImapConfig", "message_id_for"]

log = logging.getLogger("relay.channels.email")


def _port(name: str, settings: Mapping[str, Any], key: str = "port") -> int | None:
    value = settings.get(key)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"channels.{name}.{key}: expected a number, got {value!r}") from None


def _text(settings: Mapping[str, Any], key: str) -> str | None:
    return str(settings.get(key) or "").strip() or None


@dataclass(frozen=True)
class ImapConfig:
    """The ``imap_*`` keys; the login defaults to the SMTP one."""

    host: str
    port: int
    username: str | None
    password_env: str | None
    mailbox: str = "INBOX"
    use_ssl: bool = True
    starttls: bool = False
    backfill: timedelta = timedelta(days=1)
    batch: int = 100
    retry: float = 30.0
    #: Where the mail server files what it relays (Gmail, Microsoft 365 do): asked
    #: after a crash whether a message went (``imap_sent_mailbox``).
    sent_mailbox: str | None = None

    @classmethod
    def from_settings(cls, name: str, settings: Mapping[str, Any]) -> ImapConfig | None:
        host = _text(settings, "imap_host")
        if host is None:
            return None
        starttls = setting_flag(name, settings, "imap_starttls", False)
        use_ssl = setting_flag(name, settings, "imap_ssl", not starttls)
        if starttls and use_ssl:
            raise ConfigError(f"channels.{name}: set imap_ssl or imap_starttls, not both")
        backfill = settings.get("imap_backfill", "1d")
        return cls(
            host=host,
            port=_port(name, settings, "imap_port") or (993 if use_ssl else 143),
            username=_text(settings, "imap_username") or _text(settings, "username"),
            password_env=_text(settings, "imap_password_env") or _text(settings, "password_env"),
            mailbox=_text(settings, "imap_mailbox") or "INBOX",
            use_ssl=use_ssl,
            starttls=starttls,
            backfill=timedelta(
                seconds=0
                if str(backfill).strip() in {"0", "0s", ""}
                else setting_seconds(name, settings, "imap_backfill", "1d")
            ),
            batch=max(1, int(settings.get("imap_batch") or 100)),
            retry=setting_seconds(name, settings, "imap_retry", "30s"),
            sent_mailbox=_text(settings, "imap_sent_mailbox"),
        )


def _pause(name: str, settings: Mapping[str, Any]) -> timedelta | None:
    """``auto_reply_pause`` (default 7d; "0" never pauses without a return date)."""
    if str(settings.get("auto_reply_pause", "7d")).strip() in {"0", "0s", ""}:
        return None
    return timedelta(seconds=setting_seconds(name, settings, "auto_reply_pause", "7d"))


class EmailChannel:
    """Sends each message as one plain-text email; reads replies from an IMAP mailbox."""

    #: It threads a reply under the conversation's earlier mail (Outbound.thread).
    threads = True

    def __init__(
        self,
        name: str,
        host: str,
        sender: str,
        *,
        port: int | None = None,
        username: str | None = None,
        password_env: str | None = None,
        starttls: bool = False,
        use_ssl: bool = False,
        subject: str = DEFAULT_SUBJECT,
        timeout: float = 30.0,
        identity: Identity | None = None,
        imap: ImapConfig | None = None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        bounce_address: str | None = None,
        auto_reply_pause: timedelta | None = timedelta(days=7),
    ) -> None:
        if starttls and use_ssl:
            raise ConfigError(
                f"channels.{name}: set ssl (TLS from the start, port 465) or starttls "
                "(upgrade, port 587), not both"
            )
        if username and not password_env:
            raise ConfigError(f"channels.{name}: username is set but password_env is not")
        self.name = name
        self.host = host
        self.sender = sender
        self.port = port or (465 if use_ssl else 587 if starttls else 25)
        self.username = username
        self.password_env = password_env
        self.starttls = starttls
        self.use_ssl = use_ssl
        self.identity = (identity or Identity(name, sender, subject=subject)).check()
        self.timeout = timeout
        self.imap = imap
        self.now = now
        #: VERP: each message goes out with the return path ``bounces+<token>@<its domain>``.
        self.bounce_address = bounce_address
        #: An out-of-office naming no readable return date pauses its conversation this long.
        self.auto_reply_pause = auto_reply_pause
        self._poller: ImapPoller | None = None
        self._region_of: Callable[[str], str | None] | None = None

    @classmethod
    def from_settings(cls, name: str, settings: Mapping[str, Any]) -> EmailChannel:
        sender = setting_required(name, settings, "from")
        identity = Identity(
            channel=name,
            sender=sender,
            from_name=_text(settings, "from_name"),
            reply_to=_text(settings, "reply_to"),
            signature=str(settings.get("signature") or "") or None,
            subject=str(settings.get("subject") or DEFAULT_SUBJECT),
            unsubscribe_mailto=_text(settings, "unsubscribe_mailto"),
            unsubscribe_url=_text(settings, "unsubscribe_url"),
        )
        return cls(
            name,
            setting_required(name, settings, "host"),
            sender,
            port=_port(name, settings),
            username=_text(settings, "username"),
            password_env=_text(settings, "password_env"),
            starttls=setting_flag(name, settings, "starttls", False),
            use_ssl=setting_flag(name, settings, "ssl", False),
            timeout=setting_seconds(name, settings, "timeout", "30s"),
            identity=identity,
            imap=ImapConfig.from_settings(name, settings),
            bounce_address=_text(settings, "bounce_address"),
            auto_reply_pause=_pause(name, settings),
        )

    def regions_from(self, region_of: Callable[[str], str | None]) -> None:
        """How to learn a sender's region (given by the engine, which knows the contacts):
        a numeric return date in an out-of-office is read in the contact's day/month order."""
        self._region_of = region_of

    # -- checks -------------------------------------------------------------------------------

    def address_problem(self, address: str) -> str | None:
        if "@" not in address:
            return "the email channel cannot reach a phone number"
        return None

    def check(self) -> list[str]:
        """Problems ``relay start`` and ``relay doctor`` report before anything is sent."""
        import os

        problems = []
        names = {self.password_env} | ({self.imap.password_env} if self.imap else set())
        for variable in sorted(n for n in names if n):
            if not os.environ.get(variable):
                problems.append(
                    f"channel {self.name}: environment variable {variable} is not set or empty"
                )
        if self.imap is not None and not self.imap.username:
            problems.append(f"channel {self.name}: imap_host is set but no imap_username")
        return problems

    # -- sending ------------------------------------------------------------------------------

    def send(self, message: Outbound) -> str:
        problem = self.address_problem(message.to)
        if problem:
            raise PermanentChannelError(problem)
        try:
            email = build_email(self.identity, message)
        except ValueError as exc:  # e.g. a line break smuggled into a header
            raise PermanentChannelError(f"channel {self.name}: cannot build email: {exc}") from None
        password = secret_from_env(self.name, self.password_env) if self.password_env else None
        try:
            self._deliver(email, message.to, password)
        except OSError as exc:  # smtplib's errors, refused connections, timeouts, TLS
            raise self._classify(exc) from exc
        return str(email["Message-ID"])

    def reconcile(self, message: Outbound, since: datetime) -> Reconciled:
        """Whether the mail went before relay crashed: its ``Message-ID`` (made from
        the idempotency key) in the sent folder, ``imap_sent_mailbox``."""
        if self.imap is None or self.imap.sent_mailbox is None:
            return Reconciled(Fate.UNKNOWN, detail=f"channel {self.name}: no imap_sent_mailbox")
        message_id = message_id_for(message.idempotency_key)
        if self.poller().holds(self.imap.sent_mailbox, message_id):
            return Reconciled(Fate.SENT, provider_id=message_id)
        return Reconciled(Fate.NOT_SENT)

    def _connect(self) -> smtplib.SMTP:
        import smtplib
        import ssl

        if self.use_ssl:
            context = ssl.create_default_context()
            return smtplib.SMTP_SSL(self.host, self.port, timeout=self.timeout, context=context)
        return smtplib.SMTP(self.host, self.port, timeout=self.timeout)

    def _deliver(self, email: EmailMessage, to: str, password: str | None) -> None:
        import smtplib
        import ssl

        smtp = self._connect()
        try:
            if self.starttls:
                smtp.starttls(context=ssl.create_default_context())
            if self.username and password is not None:
                smtp.login(self.username, password)
            smtp.send_message(email, from_addr=self.return_path(email), to_addrs=[to])
        finally:
            # The server has the message once DATA is accepted; a failed goodbye changes nothing.
            try:
                smtp.quit()
            except (smtplib.SMTPException, OSError):
                smtp.close()

    def return_path(self, email: EmailMessage) -> str:
        """The SMTP envelope sender: a VERP address naming the message when
        ``bounce_address`` is set (a bounce then finds it even if it quotes nothing)."""
        if not self.bounce_address:
            return self.identity.address
        from relay.channels.mail.verp import verp_address

        return verp_address(self.bounce_address, str(email["Message-ID"]))

    def _classify(self, exc: OSError) -> ChannelError:
        """4xx replies and network trouble are worth a retry; 5xx and TLS misfits are not."""
        import smtplib
        import ssl

        where = f"channel {self.name}: SMTP {self.host}:{self.port}"
        if isinstance(exc, smtplib.SMTPRecipientsRefused) and exc.recipients:
            code, reply = next(iter(exc.recipients.values()))
            return _by_code(f"{where} refused the recipient", code, reply)
        if isinstance(exc, smtplib.SMTPResponseException):
            return _by_code(f"{where} refused", exc.smtp_code, exc.smtp_error)
        if isinstance(exc, smtplib.SMTPNotSupportedError | ssl.SSLCertVerificationError):
            return PermanentChannelError(f"{where}: {exc}")
        return ChannelError(f"{where}: {exc or type(exc).__name__}")

    # -- receiving ----------------------------------------------------------------------------

    def poll(self, cursor: str | None) -> Incoming:
        """The mail after ``cursor``: replies, auto-replies, unsubscribes and bounces."""
        if self.imap is None:
            return Incoming(cursor=cursor)
        from relay.channels.mail.headers import unreadable_mail
        from relay.channels.mail.parse import MAX_RAW, Mailbox, parse_mail

        fetched, moved = self.poller().fetch(cursor)
        mailbox = Mailbox(
            self.identity.address,
            self.identity.unsubscribe_address,
            self.auto_reply_pause,
            self._region_of,
        )
        messages: list[Inbound] = []
        receipts: list[Receipt] = []
        rejected: list[Rejected] = []
        for item in fetched:
            try:
                meaning = parse_mail(item.raw, item.arrived, mailbox)
            except Exception as exc:  # one malformed mail must not stop the mailbox forever
                log.warning("channel %s: cannot read mail UID %s: %r", self.name, item.uid, exc)
                rejected.append(unreadable_mail(item.uid, item.raw[:MAX_RAW], exc))
                continue
            if isinstance(meaning, Receipt):
                receipts.append(meaning)
            elif meaning is not None:
                messages.append(meaning)
        return Incoming(messages=messages, receipts=receipts, cursor=moved, rejected=rejected)

    def poller(self) -> ImapPoller:
        """One poller per channel object, so its backoff spans the daemon's polls."""
        if self._poller is None:
            from relay.channels.mail.imap import ImapPoller, ImapSettings

            imap = self.imap
            assert imap is not None
            variable = imap.password_env

            def password() -> str:
                return secret_from_env(self.name, variable) if variable else ""

            settings = ImapSettings(
                host=imap.host,
                port=imap.port,
                username=imap.username,
                password=password,
                mailbox=imap.mailbox,
                use_ssl=imap.use_ssl,
                starttls=imap.starttls,
                timeout=self.timeout,
                backfill=imap.backfill,
                batch=imap.batch,
                retry=imap.retry,
            )
            where = f"channel {self.name}: IMAP {imap.host}:{imap.port}"
            self._poller = ImapPoller(settings, lambda: self.now(), where)
        return self._poller


def _by_code(where: str, code: int, reply: bytes | str) -> ChannelError:
    text = reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)
    detail = f"{where}: {code} {' '.join(text.split())}"
    if 500 <= code < 600:
        return PermanentChannelError(detail)
    return ChannelError(detail)
