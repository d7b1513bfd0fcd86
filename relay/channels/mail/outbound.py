"""Building the email for one outbound message: identity, threading, unsubscribe.

Every message has its own ``Message-ID`` (from the idempotency key, so a retry
carries the same one). Every message after the first names the thread:
``In-Reply-To`` the latest message of the conversation (ours or theirs) and
``References`` all of them, oldest first, so mail clients show one thread and
the contact's answer comes back with ids relay can route by. The subject is
the conversation's subject, with ``Re:`` after the first message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from relay.core.errors import ConfigError

if TYPE_CHECKING:
    from email.message import EmailMessage

    from relay.channels.base import Outbound

DEFAULT_SUBJECT = "Message from relay"
_NOT_ID_SAFE = re.compile(r"[^A-Za-z0-9_+=-]")
_RE = re.compile(r"^\s*re\s*:", re.IGNORECASE)
#: RFC 5322 asks to keep References short; the first id and the latest ones are what clients use.
MAX_REFERENCES = 20


def message_id_for(idempotency_key: str) -> str:
    """The Message-ID for a key; characters a msg-id cannot hold become ``-``."""
    return f"<{_NOT_ID_SAFE.sub('-', idempotency_key) or 'relay'}@relay>"


def angle(message_id: str) -> str:
    """``<id>`` whatever form the id was stored in."""
    bare = message_id.strip().strip("<>").strip()
    return f"<{bare}>"


@dataclass(frozen=True)
class Identity:
    """Who the mail is from and how a contact answers or leaves; from ``[channels.NAME]``."""

    channel: str
    sender: str  # "Sales <sales@example.org>" or a bare address
    from_name: str | None = None
    reply_to: str | None = None
    signature: str | None = None
    subject: str = DEFAULT_SUBJECT  # used when the conversation has no subject of its own
    unsubscribe_mailto: str | None = None
    unsubscribe_url: str | None = None

    @property
    def address(self) -> str:
        from email.utils import parseaddr

        return parseaddr(self.sender)[1] or self.sender

    @property
    def unsubscribe_address(self) -> str:
        """``unsubscribe_mailto``, else the sender's address with a ``+unsubscribe`` tag."""
        if self.unsubscribe_mailto:
            return self.unsubscribe_mailto.removeprefix("mailto:")
        local, _, domain = self.address.partition("@")
        return f"{local}+unsubscribe@{domain}" if domain else self.address

    def check(self) -> Identity:
        try:
            self.subject.format(instance_id="i", channel=self.channel, message_id=0)
        except (KeyError, IndexError, ValueError) as exc:
            raise ConfigError(
                f"channels.{self.channel}.subject: {exc!r}; placeholders are {{instance_id}}, "
                "{channel} and {message_id}"
            ) from None
        if self.unsubscribe_url and not self.unsubscribe_url.startswith("https://"):
            raise ConfigError(
                f"channels.{self.channel}.unsubscribe_url: one-click unsubscribe needs an "
                f"https:// URL, got {self.unsubscribe_url!r}"
            )
        return self


def subject_for(identity: Identity, message: Outbound) -> str:
    """The conversation's subject, ``Re:`` once the thread has begun."""
    subject = message.subject or identity.subject.format(
        instance_id=message.instance_id or "",
        channel=identity.channel,
        message_id=message.message_id,
    )
    if message.thread and not _RE.match(subject):
        return f"Re: {subject}"
    return subject


def build_email(identity: Identity, message: Outbound) -> EmailMessage:
    """The complete email for ``message``; raises ValueError on a header that cannot be."""
    from email.message import EmailMessage
    from email.utils import formataddr, formatdate

    email = EmailMessage()
    sender = formataddr((identity.from_name, identity.address)) if identity.from_name else None
    email["From"] = sender or identity.sender
    email["To"] = message.to
    if identity.reply_to:
        email["Reply-To"] = identity.reply_to
    email["Subject"] = subject_for(identity, message)
    email["Message-ID"] = message_id_for(message.idempotency_key)
    email["Date"] = formatdate(usegmt=True)
    _thread_headers(email, message.thread)
    _unsubscribe_headers(email, identity, message.unsubscribe_token)
    if message.instance_id:
        email["X-Relay-Instance"] = message.instance_id
    email.set_content(_with_signature(message.text, identity.signature))
    return email


def _thread_headers(email: EmailMessage, thread: tuple[str, ...]) -> None:
    ids = [angle(i) for i in thread if i and i.strip().strip("<>")]
    if not ids:
        return
    email["In-Reply-To"] = ids[-1]
    if len(ids) > MAX_REFERENCES:
        ids = ids[:1] + ids[-(MAX_REFERENCES - 1) :]
    email["References"] = " ".join(ids)


def _unsubscribe_headers(email: EmailMessage, identity: Identity, token: str | None) -> None:
    """RFC 2369 ``List-Unsubscribe`` with a mailto: always; RFC 8058 one-click with https.

    ``List-Unsubscribe-Post`` is added only with the https URL: RFC 8058 makes
    one-click a POST to an https URI, and a mailbox provider ignores (or
    distrusts) the header without one.
    """
    targets = [f"<mailto:{identity.unsubscribe_address}?subject=unsubscribe>"]
    if identity.unsubscribe_url and token:
        targets.append(f"<{identity.unsubscribe_url.rstrip('/')}/unsubscribe/{token}>")
    email["List-Unsubscribe"] = ", ".join(targets)
    if len(targets) > 1:
        email["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"


def _with_signature(text: str, signature: str | None) -> str:
    """The body, with the signature after the RFC 3676 separator ``-- ``."""
    if not signature or not signature.strip():
        return text
    return f"{text.rstrip()}\n\n-- \n{signature.strip()}\n"
