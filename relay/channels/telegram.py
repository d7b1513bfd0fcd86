"""Telegram through the Bot API, with ``httpx``.

A contact is a chat id, written ``telegram:123456789``. A bot cannot write to a
person first: the person must open the bot (``t.me/<bot>``, or the deep link
``t.me/<bot>?start=<token>``) and press Start; until then ``sendMessage``
answers 403 or "chat not found", which relay reports as a permanent error
naming that cause. Replies come by ``getUpdates`` (the update offset is the
cursor the store keeps, so nothing is read twice or lost across restarts) or
by the webhook route of ``relay serve`` (``/telegram/<channel>/webhook``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from relay.channels.base import (
    ChannelError,
    ChannelUnavailable,
    Inbound,
    Incoming,
    Outbound,
    PermanentChannelError,
    Rejected,
    missing_env,
    secret_from_env,
    setting_flag,
    setting_required,
    setting_seconds,
)
from relay.core.errors import ConfigError

if TYPE_CHECKING:
    import httpx

DEFAULT_API = "https://api.telegram.org"
PREFIX = "telegram:"
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
NOT_STARTED = (
    "the user has not started the bot (or blocked it): a bot cannot write first; "
    "send them the link `relay contact link <channel> <contact>` prints and wait for "
    "their /start"
)
START = "/start"
#: Telegram's limits on a deep link's start parameter.
START_PARAMETER = re.compile(r"[A-Za-z0-9_-]{1,64}")


class TelegramChannel:
    """The ``telegram`` channel type."""

    #: Outbound.thread is not read here (the outbox then does not look it up).
    threads = False
    #: Nor Outbound.unsubscribe_token (the outbox then reads no token key).
    unsubscribe_links = False

    def __init__(self, name: str, settings: Mapping[str, Any]) -> None:
        self.name = name
        self.token_env = setting_required(name, settings, "token_env")
        self.api_url = str(settings.get("api_url") or DEFAULT_API).rstrip("/")
        if not self.api_url.startswith(("http://", "https://")):
            raise ConfigError(f"channels.{name}.api_url: expected an http(s):// URL")
        self.timeout = setting_seconds(name, settings, "timeout", "15s")
        self.poll_timeout = int(_seconds(name, settings, "poll_timeout", 10))
        self.polling = setting_flag(name, settings, "polling", True)
        self.webhook_secret_env = str(settings.get("webhook_secret_env") or "") or None
        self.bot = str(settings.get("bot_username") or "") or None
        self._client: httpx.Client | None = None

    def send(self, message: Outbound) -> str:
        chat = chat_id(message.to)
        if chat is None:
            raise PermanentChannelError(f"channel {self.name}: {self.address_problem(message.to)}")
        result = self._call("sendMessage", {"chat_id": chat, "text": message.text})
        return f"{chat}:{result.get('message_id')}"

    def poll(self, cursor: str | None) -> Incoming:
        """``getUpdates`` from the stored offset; the new cursor is one past the
        last update seen, which also tells Telegram to forget the earlier ones."""
        if not self.polling:
            return Incoming(cursor=cursor)
        params: dict[str, Any] = {"timeout": self.poll_timeout, "allowed_updates": ["message"]}
        if cursor:
            params["offset"] = int(cursor)
        updates = self._call("getUpdates", params, wait=self.poll_timeout)
        if not updates:
            return Incoming(cursor=cursor)
        messages: list[Inbound] = []
        rejected: list[Rejected] = []
        for update in updates:
            try:
                message = parse_update(update)
            except (ValueError, TypeError, AttributeError, KeyError, OverflowError) as exc:
                raw = json.dumps(update, ensure_ascii=False, default=str)
                why = f"malformed update: {type(exc).__name__}: {exc}"
                rejected.append(Rejected(why, raw, provider_message_id=_update_id(update)))
                continue
            if message is not None:
                messages.append(message)
        newest = max((n for n in map(_update_number, updates) if n >= 0), default=None)
        moved = cursor if newest is None else str(newest + 1)
        return Incoming(messages=messages, cursor=moved, rejected=rejected)

    def check(self) -> list[str]:
        return missing_env(self.name, "token_env", self.token_env)

    def address_problem(self, address: str) -> str | None:
        if chat_id(address) is not None:
            return None
        link = f"t.me/{self.bot or '<bot>'}?start=<token>"
        return (
            f"{address} has no Telegram chat bound on channel {self.name}, and a bot "
            "cannot write first: send them the link `relay contact link "
            f"{self.name} {address}` prints ({link}); their Start binds "
            "their chat, then start again (or give a chat id: telegram:123456789)"
        )

    def deep_link(self, token: str) -> str:
        """``https://t.me/<bot>?start=<token>``: opening it and pressing Start sends
        ``/start <token>`` from the person's chat."""
        if not self.bot:
            raise ConfigError(
                f"channels.{self.name}.bot_username is not set: relay needs the bot's "
                "username (from @BotFather, without @) to make its t.me link"
            )
        if not START_PARAMETER.fullmatch(token):
            raise ConfigError(f"channel {self.name}: {token!r} cannot be a start parameter")
        return f"https://t.me/{self.bot.removeprefix('@')}?start={token}"

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _call(self, method: str, payload: Mapping[str, Any], wait: float = 0) -> Any:
        import httpx

        token = secret_from_env(self.name, self.token_env)
        if self._client is None:
            self._client = httpx.Client(timeout=self.timeout)
        url = f"{self.api_url}/bot{token}/{method}"
        try:
            response = self._client.post(url, json=dict(payload), timeout=self.timeout + wait)
        except httpx.TimeoutException as exc:
            raise ChannelError(f"channel {self.name}: {method} timed out") from exc
        except httpx.TransportError as exc:
            # The URL holds the token: name the method, never the URL.
            raise ChannelError(f"channel {self.name}: {method}: Bot API unreachable") from exc
        try:
            body = response.json()
        except ValueError:
            body = {}
        if response.status_code == 200 and body.get("ok"):
            return body.get("result")
        raise api_error(self.name, method, response.status_code, body)


def api_error(name: str, method: str, status: int, body: Mapping[str, Any]) -> ChannelError:
    """The Bot API's ``{"ok": false, "error_code", "description", "parameters"}``
    turned into relay's meaning."""
    code = int(body.get("error_code") or status)
    description = str(body.get("description") or f"HTTP {status}")
    detail = f"channel {name}: {method}: {code} {description}"
    if code == 429:
        retry = (body.get("parameters") or {}).get("retry_after")
        return ChannelError(detail, retry_after=float(retry) if retry is not None else None)
    if code >= 500:
        return ChannelError(detail)
    if code in (401, 404):
        return ChannelUnavailable(detail + " (check the bot token); messages stay queued")
    if code == 403 or "chat not found" in description.lower():
        return PermanentChannelError(f"{detail}: {NOT_STARTED}")
    return PermanentChannelError(detail)


def chat_id(address: str) -> str | None:
    """``telegram:123456789`` (or a group's ``telegram:-100...``) -> the chat id."""
    if not address.startswith(PREFIX):
        return None
    value = address[len(PREFIX) :]
    return value if value.lstrip("-").isdigit() else None


def parse_update(update: Mapping[str, Any]) -> Inbound | None:
    """One update as an inbound message; None for what is not a text message
    (edits, photos, joins): the offset still moves past it."""
    message = update.get("message")
    if not isinstance(message, Mapping) or not isinstance(message.get("text"), str):
        return None
    chat = (message.get("chat") or {}).get("id")
    if chat is None:
        return None
    date = message.get("date")
    return Inbound(
        sender=f"{PREFIX}{chat}",
        text=message["text"],
        received_at=datetime.fromtimestamp(int(date), UTC) if date else None,
        provider_message_id=f"update-{update.get('update_id')}",
        raw=json.dumps(update, ensure_ascii=False),
        bind_token=start_parameter(message["text"]),
    )


def _update_number(update: Any) -> int:
    """An update's id; one without a usable id (never sent by Telegram) counts as -1."""
    try:
        return int(update["update_id"])
    except (KeyError, TypeError, ValueError):
        return -1


def _update_id(update: Any) -> str | None:
    number = _update_number(update)
    return None if number < 0 else f"update-{number}"


def start_parameter(text: str) -> str | None:
    """``/start abc`` (what a deep link ``t.me/<bot>?start=abc`` sends) -> ``abc``."""
    command, _, rest = text.strip().partition(" ")
    if command.split("@", 1)[0] != START:
        return None
    parameter = rest.strip()
    return parameter if START_PARAMETER.fullmatch(parameter) else None


def _seconds(name: str, settings: Mapping[str, Any], key: str, default: int) -> float:
    if key not in settings:
        return float(default)
    value = settings[key]
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return setting_seconds(name, settings, key, f"{default}s")
