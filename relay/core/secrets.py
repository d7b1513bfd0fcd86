"""Recognising secrets and masking them wherever relay prints or logs text.

Secrets live in environment variables named by ``*_env`` keys; a value that
reached relay anyway (a password inside a database or webhook URL) is shown
as ``***``. Stdlib only, so every layer can mask what it prints.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"

#: Key names (the last part of a dotted key) that hold a secret.
SECRET_WORDS = (
    "password",
    "passwd",
    "secret",
    "token",
    "api_key",
    "apikey",
    "auth_token",
    "private_key",
    "access_key",
)

# scheme://user:password@ -> scheme://user:***@ anywhere in a line of text.
_USERINFO = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]*:)[^\s@/]+@")
# ?token=abc or &api_key=abc anywhere in a line of text.
_QUERY = re.compile(
    r"(?P<head>[?&](?:[a-z_]*_)?(?:" + "|".join(SECRET_WORDS) + r"|key|sig|signature)=)[^&\s#'\"]+",
    re.IGNORECASE,
)


#: Authorization: Bearer abc, X-Api-Key: abc, Cookie: a=b (as an error may quote them).
_HEADER_NAMES = ("authorization", "api-key", "api_key", "auth-token", "cookie")
_HEADER = re.compile(
    r"(?P<head>\b(?:proxy-)?(?:authorization|x-api-key|api-key|api_key|x-auth-token|cookie)"
    r"[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|digest)\s+)?)[^\s,;'\"]+",
    re.IGNORECASE,
)


def is_secret_key(key: str) -> bool:
    """Whether a setting (``channels.email.password``) holds a secret itself.

    ``password_env`` names a variable and is not a secret; ``password``,
    ``smtp_password`` and ``bot_token`` are.
    """
    name = key.rsplit(".", 1)[-1].lower()
    if name.endswith("_env"):
        return False
    return any(name == word or name.endswith("_" + word) for word in SECRET_WORDS)


def mask_url(url: str) -> str:
    """``postgresql://u:pw@host/db`` -> ``postgresql://u:***@host/db``; secret query
    parameters (``?token=...``) are masked too. Text that is not a URL comes back as is."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return mask_text(url)
    if not parts.scheme or not parts.netloc:
        return url
    netloc = parts.netloc
    if parts.password is not None:
        userinfo, _, host = netloc.rpartition("@")
        netloc = f"{userinfo.split(':', 1)[0]}:{MASK}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, MASK if _secret_param(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _secret_param(name: str) -> bool:
    lowered = name.lower()
    return is_secret_key(lowered) or lowered in ("key", "sig", "signature")


def mask_text(text: str) -> str:
    """Mask every URL password, secret query parameter and credential header
    (``Authorization: Bearer ...``) inside free text (error messages, log lines),
    wherever it appears."""
    lowered = text.lower()
    if any(name in lowered for name in _HEADER_NAMES):
        text = _HEADER.sub(lambda m: m.group("head") + MASK, text)
    if "://" not in text and "=" not in text:
        return text  # neither pattern can match: most log lines, searched for free
    text = _USERINFO.sub(lambda m: m.group("head") + MASK + "@", text)
    return _QUERY.sub(lambda m: m.group("head") + MASK, text)


def mask_optional(text: str | None) -> str | None:
    """:func:`mask_text` of an error or a reason that may be missing (as views show
    them: rows stored before relay masked them are masked when read)."""
    return None if text is None else mask_text(text)


def mask_value(key: str, value: object) -> object:
    """How ``relay config show`` displays a setting: secrets as ``***``, URLs masked."""
    if is_secret_key(key) and value not in (None, ""):
        return MASK
    if isinstance(value, str) and "://" in value:
        return mask_url(value)
    return value
