"""Headers the standard library cannot parse, set aside before anyone reads them.

``email.policy.default`` parses a structured header (an address list, a date)
the first time it is read, and some malformed values make that parser itself
fail (``Cc: "x" <`` raises IndexError, ``Cc: a@[127.0.0.1`` AttributeError).
Such a header would make a whole reply unreadable, so each header of each part
is tried once here; one that fails is removed from the parsed message (the raw
bytes, kept for audit, still hold it) and named, so that the reply is stored
with a note instead of lost.
"""

from __future__ import annotations

from email.message import Message

from relay.channels.base import Rejected
from relay.core.storable import raw_for_store


def drop_unreadable(mail: Message) -> list[str]:
    """Remove the headers of ``mail`` (and of its parts) that cannot be parsed;
    the names of those removed, in order."""
    dropped = _drop_in(mail)
    if dropped:
        return dropped  # a broken Content-Type: the parts are no longer what they were
    try:
        parts = list(mail.walk())
    except Exception:
        return dropped
    for part in parts[1:]:
        dropped += _drop_in(part)
    return dropped


def _drop_in(part: Message) -> list[str]:
    items = list(part.raw_items())
    broken = [i for i, (name, value) in enumerate(items) if not _readable(part, name, value)]
    if not broken:
        return []
    for name in {name for name, _ in items}:
        del part[name]
    for i, (name, value) in enumerate(items):
        if i not in broken:
            part.set_raw(name, value)
    return [items[i][0] for i in broken]


def _readable(part: Message, name: str, value: str) -> bool:
    try:
        header = part.policy.header_fetch_parse(name, value)
        str(header)
        getattr(header, "addresses", None)
        getattr(header, "datetime", None)
        getattr(header, "params", None)
    except Exception:
        return False
    return True


def unreadable_mail(uid: int, raw: bytes, exc: Exception) -> Rejected:
    """A mail the parser could not read, as a rejected arrival: its bytes kept (the
    caller cuts an oversize one), its sender and Message-ID read from the raw
    header lines where they can be."""
    import re

    head = raw.split(b"\r\n\r\n", 1)[0].split(b"\n\n", 1)[0].decode("utf-8", "replace")
    sender = re.search(r"(?im)^from:[^\n]*?([^\s<>\"]+@[^\s<>\"]+)", head)
    message_id = re.search(r"(?im)^message-id:\s*(<[^<>\s]+>)", head)
    detail = " ".join(str(exc).split()) or type(exc).__name__
    return Rejected(
        reason=f"unreadable mail (UID {uid}): {type(exc).__name__}: {detail}",
        raw=raw_for_store(raw),
        sender=sender.group(1).lower() if sender else "",
        provider_message_id=message_id.group(1) if message_id else None,
    )
