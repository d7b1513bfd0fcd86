"""Text a database column can hold, made from whatever arrived.

PostgreSQL text cannot hold a NUL character, and no database driver encodes a
lone surrogate (what ``surrogateescape`` leaves of bytes that are not UTF-8):
one such character in one field of one inbound message would fail the
transaction that stores it, every time it is read again, and hold back every
message after it. So everything an arrival carries is made storable here, at
the boundary, and the raw message is kept losslessly: as text when its bytes
are clean UTF-8, else in a base64 form that gives back the very bytes.
"""

from __future__ import annotations

import base64
import binascii
import re

_SURROGATE = re.compile("[\ud800-\udfff]")
#: The first line of a raw message kept as base64 (its bytes were not clean UTF-8).
BASE64_MARK = "relay:raw-base64\n"


def storable(value: str) -> str:
    """``value`` without NUL characters, lone surrogates replaced by U+FFFD."""
    if "\x00" in value:
        value = value.replace("\x00", "")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = _SURROGATE.sub("\ufffd", value)
    return value


def storable_or_none(value: str | None) -> str | None:
    return None if value is None else storable(value)


def raw_for_store(raw: bytes) -> str:
    """The raw message as text that gives back ``raw`` exactly (see :func:`raw_bytes`)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and "\x00" not in text and not text.startswith(BASE64_MARK):
        return text
    return BASE64_MARK + base64.b64encode(raw).decode("ascii")


def raw_bytes(stored: str) -> bytes:
    """The bytes :func:`raw_for_store` was given (a cut base64 form gives what is left)."""
    if stored.startswith(BASE64_MARK):
        body = stored[len(BASE64_MARK) :]
        body = body[: len(body) - len(body) % 4]
        try:
            return base64.b64decode(body, validate=False)
        except (binascii.Error, ValueError):
            return stored.encode("utf-8", "replace")
    return stored.encode("utf-8", "replace")
