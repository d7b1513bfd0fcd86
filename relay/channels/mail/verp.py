"""VERP: a return path per message, so that a bounce names its message by where it goes.

Each message is sent with the SMTP envelope sender ``bounces+<token>@domain``
(the token is the local part of its ``Message-ID``); a bounce goes back to
that address, so its recipient headers name the message even when the
report quotes nothing of it.
"""

from __future__ import annotations

import re
from email.message import Message

from relay.channels.mail.bounce_text import VERP_PREFIX

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
