"""A channel that hands messages to an HTTP endpoint the operator runs (or a provider's bridge).

The endpoint gets the idempotency key twice, in the JSON body and in the
``Idempotency-Key`` header, so it can answer a retry with the first result
instead of sending again. With ``secret_env`` set, the body is signed
(``X-Relay-Signature: sha256=<hex HMAC>``) so the endpoint can tell relay
from anyone else who finds the URL.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from relay.channels.base import (
    ChannelError,
    Inbound,
    Incoming,
    Outbound,
    PermanentChannelError,
    missing_env,
    secret_from_env,
    setting_required,
    setting_seconds,
)
from relay.core.clock import ensure_utc
from relay.core.errors import ConfigError

if TYPE_CHECKING:
    import httpx

#: Statuses worth retrying: the request timed out, we were throttled, or the server broke.
TRANSIENT_STATUSES = frozenset({408, 425, 429})
EXCERPT = 200


def _check_url(name: str, key: str, url: str) -> str:
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"channels.{name}.{key}: expected an http(s):// URL, got {url!r}")
    return url


class WebhookChannel:
    """POSTs each message as JSON; optionally polls a URL for replies."""

    #: Outbound.thread is not read here (the outbox then does not look it up).
    threads = False
    #: Nor Outbound.unsubscribe_token (the outbox then reads no token key).
    unsubscribe_links = False
    #: The receiver gets the idempotency key (body and ``Idempotency-Key`` header)
    #: and drops a second delivery of it: sending again after a crash is safe.
    resend_safe = True

    def __init__(
        self,
        name: str,
        url: str,
        *,
        timeout: float = 10.0,
        secret_env: str | None = None,
        poll_url: str | None = None,
    ) -> None:
        self.name = name
        self.url = _check_url(name, "url", url)
        self.poll_url = _check_url(name, "poll_url", poll_url) if poll_url else None
        self.timeout = timeout
        self.secret_env = secret_env
        self._client: httpx.Client | None = None

    @classmethod
    def from_settings(cls, name: str, settings: Mapping[str, Any]) -> WebhookChannel:
        return cls(
            name,
            setting_required(name, settings, "url"),
            timeout=setting_seconds(name, settings, "timeout", "10s"),
            secret_env=str(settings.get("secret_env") or "") or None,
            poll_url=str(settings.get("poll_url") or "") or None,
        )

    def send(self, message: Outbound) -> str:
        body = json.dumps(
            {
                "to": message.to,
                "text": message.text,
                "instance_id": message.instance_id,
                "message_id": message.message_id,
                "idempotency_key": message.idempotency_key,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        ).encode("utf-8")
        headers = {
            "Content-Type": "application/json",
            "Idempotency-Key": message.idempotency_key,
        }
        if self.secret_env:
            secret = secret_from_env(self.name, self.secret_env).encode("utf-8")
            digest = hmac.new(secret, body, hashlib.sha256).hexdigest()
            headers["X-Relay-Signature"] = f"sha256={digest}"
        response = self._request("POST", self.url, content=body, headers=headers)
        return _provider_id(response) or message.idempotency_key

    def poll(self, cursor: str | None) -> Incoming:
        """GET ``poll_url`` (with ``?cursor=`` once the endpoint has given one).

        The endpoint answers ``{"messages": [...], "cursor": "..."}``; the cursor
        is optional, and an endpoint without one should hand each message out
        until it ages out (the ids make repeats harmless).
        """
        if not self.poll_url:
            return Incoming()
        params = {"cursor": cursor} if cursor is not None else None
        response = self._request("GET", self.poll_url, params=params)
        try:
            data = response.json()
            items = data["messages"]
            messages = [_inbound(item) for item in items]
            after = data.get("cursor")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ChannelError(
                f"channel {self.name}: {self.poll_url} answered with an unexpected body "
                f"({exc}); expected {{'messages': [{{'from': ..., 'text': ...}}]}}"
            ) from None
        return Incoming(messages=messages, cursor=None if after in (None, "") else str(after))

    def check(self) -> list[str]:
        return missing_env(self.name, "secret_env", self.secret_env)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        import httpx

        if self._client is None:
            self._client = httpx.Client(timeout=self.timeout)
        try:
            response = self._client.request(method, url, **kwargs)
        except httpx.TimeoutException as exc:
            raise ChannelError(f"channel {self.name}: {url} timed out ({exc})") from exc
        except httpx.TransportError as exc:
            raise ChannelError(f"channel {self.name}: {url} unreachable ({exc})") from exc
        _raise_for_status(self.name, url, response)
        return response


def _raise_for_status(name: str, url: str, response: httpx.Response) -> None:
    status = response.status_code
    if 200 <= status < 300:
        return
    excerpt = " ".join(response.text.split())[:EXCERPT]
    detail = f"channel {name}: {url} answered {status}" + (f": {excerpt}" if excerpt else "")
    if status in TRANSIENT_STATUSES or status >= 500:
        raise ChannelError(detail)
    raise PermanentChannelError(detail)


def _provider_id(response: httpx.Response) -> str | None:
    """The endpoint's id for the message, if it gave one; many answer 204 or plain text."""
    try:
        data = response.json()
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    value = data.get("id") or data.get("message_id")
    return str(value) if value not in (None, "") else None


def _inbound(item: Mapping[str, Any]) -> Inbound:
    received = item.get("received_at")
    return Inbound(
        sender=str(item["from"]),
        text=str(item["text"]),
        received_at=ensure_utc(datetime.fromisoformat(str(received))) if received else None,
        provider_message_id=str(item["id"]) if item.get("id") not in (None, "") else None,
    )


# -- inbound, through `relay serve` ----------------------------------------------------------

TIMESTAMP_HEADER = "X-Relay-Timestamp"
SIGNATURE_HEADER = "X-Relay-Signature"
#: A signed request older (or further in the future) than this is refused: a
#: captured request cannot be replayed later, and a replay inside the window
#: carries the same ``id``, which the store keeps once.
FRESHNESS_SECONDS = 300


def sign_inbound(secret: str, timestamp: int, body: bytes) -> str:
    """The ``X-Relay-Signature`` value for an inbound POST: HMAC-SHA256 of
    ``"<timestamp>." + body``, so the timestamp cannot be changed on its own."""
    signed = str(timestamp).encode("ascii") + b"." + body
    return "sha256=" + hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).hexdigest()


def verify_inbound(
    secret: str,
    timestamp: str | None,
    signature: str | None,
    body: bytes,
    now: float,
    window: float = FRESHNESS_SECONDS,
) -> str | None:
    """None when the request is signed and fresh, else why it is refused."""
    if not timestamp or not signature:
        return f"missing {TIMESTAMP_HEADER} or {SIGNATURE_HEADER}"
    try:
        stamp = int(timestamp)
    except ValueError:
        return f"{TIMESTAMP_HEADER} is not a Unix time"
    if abs(now - stamp) > window:
        return f"{TIMESTAMP_HEADER} is outside the {int(window)}s window"
    if not hmac.compare_digest(sign_inbound(secret, stamp, body), signature.strip()):
        return "signature does not match"
    return None


def parse_inbound_json(body: bytes) -> Inbound:
    """``{"from", "text", "id"}`` (``received_at`` optional) -> an inbound message."""
    item = json.loads(body)
    if not isinstance(item, dict) or not item.get("from") or not isinstance(item.get("text"), str):
        raise ValueError('expected {"from": ..., "text": ..., "id": ...}')
    return replace(_inbound(item), raw=body.decode("utf-8", "replace"))
