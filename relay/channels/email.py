"""Email over SMTP, for contacts whose address is an email address.

SMTP has no idempotency header, so the key becomes the ``Message-ID``
(``<key@relay>``): a retry after a lost "250 OK" produces a message with the
same id, which mail clients and filters treat as a duplicate. That id is what
``send`` returns.

Inbound email (IMAP or a provider's inbound hook) is out of scope for now:
``poll`` returns nothing, and replies come in through ``relay receive``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from relay.channels.base import (
    ChannelError,
    Incoming,
    Outbound,
    PermanentChannelError,
    secret_from_env,
    setting_flag,
    setting_required,
    setting_seconds,
)
from relay.core.errors import ConfigError

if TYPE_CHECKING:
    import smtplib
    from email.message import EmailMessage

DEFAULT_SUBJECT = "Message from relay"
_NOT_ID_SAFE = re.compile(r"[^A-Za-z0-9_+=-]")


def message_id_for(idempotency_key: str) -> str:
    """The Message-ID for a key; characters a msg-id cannot hold become ``-``."""
    return f"<{_NOT_ID_SAFE.sub('-', idempotency_key) or 'relay'}@relay>"


def _port(name: str, settings: Mapping[str, Any]) -> int | None:
    value = settings.get("port")
    if value in (None, ""):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"channels.{name}.port: expected a number, got {value!r}") from None


def _check_subject(name: str, subject: str) -> str:
    try:
        subject.format(instance_id="i", channel=name, message_id=0)
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigError(
            f"channels.{name}.subject: {exc!r}; placeholders are {{instance_id}}, "
            "{channel} and {message_id}"
        ) from None
    return subject


class EmailChannel:
    """Sends each message as one plain-text email through an SMTP server."""

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
        self.subject = _check_subject(name, subject)
        self.timeout = timeout

    @classmethod
    def from_settings(cls, name: str, settings: Mapping[str, Any]) -> EmailChannel:
        return cls(
            name,
            setting_required(name, settings, "host"),
            setting_required(name, settings, "from"),
            port=_port(name, settings),
            username=str(settings.get("username") or "") or None,
            password_env=str(settings.get("password_env") or "") or None,
            starttls=setting_flag(name, settings, "starttls", False),
            use_ssl=setting_flag(name, settings, "ssl", False),
            subject=str(settings.get("subject") or DEFAULT_SUBJECT),
            timeout=setting_seconds(name, settings, "timeout", "30s"),
        )

    def send(self, message: Outbound) -> str:
        if "@" not in message.to:
            raise PermanentChannelError("email channel cannot reach a phone number")
        try:
            email = self._build(message)
        except ValueError as exc:  # e.g. a line break smuggled into a header
            raise PermanentChannelError(f"channel {self.name}: cannot build email: {exc}") from None
        password = secret_from_env(self.name, self.password_env) if self.password_env else None
        try:
            self._deliver(email, message.to, password)
        except OSError as exc:  # smtplib's errors, refused connections, timeouts, TLS
            raise self._classify(exc) from exc
        return str(email["Message-ID"])

    def poll(self, cursor: str | None) -> Incoming:
        return Incoming()

    def _build(self, message: Outbound) -> EmailMessage:
        from email.message import EmailMessage
        from email.utils import formatdate

        email = EmailMessage()
        email["From"] = self.sender
        email["To"] = message.to
        email["Subject"] = self.subject.format(
            instance_id=message.instance_id or "",
            channel=self.name,
            message_id=message.message_id,
        )
        email["Message-ID"] = message_id_for(message.idempotency_key)
        email["Date"] = formatdate(usegmt=True)
        if message.instance_id:
            email["X-Relay-Instance"] = message.instance_id
        email.set_content(message.text)
        return email

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
            smtp.send_message(email, from_addr=self.sender, to_addrs=[to])
        finally:
            # The server has the message once DATA is accepted; a failed goodbye changes nothing.
            try:
                smtp.quit()
            except (smtplib.SMTPException, OSError):
                smtp.close()

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


def _by_code(where: str, code: int, reply: bytes | str) -> ChannelError:
    text = reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)
    detail = f"{where}: {code} {' '.join(text.split())}"
    if 500 <= code < 600:
        return PermanentChannelError(detail)
    return ChannelError(detail)
