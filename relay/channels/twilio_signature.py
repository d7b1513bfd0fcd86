"""Twilio's request signature (``X-Twilio-Signature``), checked without the SDK.

Twilio signs each webhook with the account's auth token: HMAC-SHA1 (or SHA-256
when the request names it in ``X-Twilio-Webhooks-Signature-Settings``) over the
full URL it called followed by every POST parameter, name then value, sorted by
name, base64-encoded. relay recomputes it from ``public_url`` + the path, since
behind a proxy or tunnel the URL the server sees is not the one Twilio called.
The twenty lines here spare ``relay serve`` the SDK's dependencies (requests,
aiohttp); the tests sign with the SDK's ``RequestValidator`` so both must agree.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Iterable
from urllib.parse import urlsplit, urlunsplit

SIGNATURE_HEADER = "X-Twilio-Signature"
SETTINGS_HEADER = "X-Twilio-Webhooks-Signature-Settings"
_HASHES = {"HMAC_SHA1": hashlib.sha1, "HMAC_SHA256": hashlib.sha256}


def algorithm_of(settings_header: str | None) -> str:
    """The algorithm named in the settings header; none named means HMAC-SHA1."""
    for part in (settings_header or "").split(","):
        name, sep, value = part.partition("=")
        if sep and name.strip() == "algorithm" and value.strip():
            return value.strip().upper()
    return "HMAC_SHA1"


def compute(token: str, url: str, params: Iterable[tuple[str, str]], algorithm: str) -> str:
    by_name: dict[str, set[str]] = {}
    for name, value in params:
        by_name.setdefault(name, set()).add(value)
    text = url + "".join(
        name + value for name in sorted(by_name) for value in sorted(by_name[name])
    )
    digest = hmac.new(token.encode("utf-8"), text.encode("utf-8"), _HASHES[algorithm]).digest()
    return base64.b64encode(digest).decode("ascii")


def verify(
    token: str,
    url: str,
    params: Iterable[tuple[str, str]],
    signature: str | None,
    settings_header: str | None = None,
) -> bool:
    """True when ``signature`` is Twilio's for this URL and these parameters.

    Twilio signs some URLs with the default port spelled out and some without,
    so both forms are accepted, as the SDK does.
    """
    algorithm = algorithm_of(settings_header)
    if not signature or algorithm not in _HASHES:
        return False
    pairs = list(params)
    if hmac.compare_digest(compute(token, url, pairs, algorithm), signature):
        return True  # the URL as given (most requests): no other form is built
    return any(
        hmac.compare_digest(compute(token, candidate, pairs, algorithm), signature)
        for candidate in _port_forms(url)
        if candidate != url
    )


def _port_forms(url: str) -> list[str]:
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    userinfo = parts.netloc.rpartition("@")[0]
    prefix = userinfo + "@" if userinfo else ""
    bare = parts._replace(netloc=f"{prefix}{host}")
    with_port = parts._replace(netloc=f"{prefix}{host}:{port}")
    return [urlunsplit(bare), urlunsplit(with_port)]
