"""The channels that ship with relay, registered like any third-party one.

Each factory imports its module only when a channel of that kind is built, so
listing or reading instances never pays for smtplib or httpx.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relay.channels.base import Channel, ChannelFactory, register_channel


def _console(name: str, settings: Mapping[str, Any]) -> Channel:
    from relay.channels.console import ConsoleChannel

    return ConsoleChannel.from_settings(name, settings)


def _webhook(name: str, settings: Mapping[str, Any]) -> Channel:
    from relay.channels.webhook import WebhookChannel

    return WebhookChannel.from_settings(name, settings)


def _email(name: str, settings: Mapping[str, Any]) -> Channel:
    from relay.channels.email import EmailChannel

    return EmailChannel.from_settings(name, settings)


register_channel("console", _console)
register_channel("webhook", _webhook)
register_channel("email", _email)


def _twilio(kind: str) -> ChannelFactory:
    def factory(name: str, settings: Mapping[str, Any]) -> Channel:
        from relay.channels.twilio import TwilioChannel

        return TwilioChannel(name, kind, settings)

    return factory


def _telegram(name: str, settings: Mapping[str, Any]) -> Channel:
    from relay.channels.telegram import TelegramChannel

    return TelegramChannel(name, settings)


register_channel("sms", _twilio("sms"))
register_channel("whatsapp", _twilio("whatsapp"))
register_channel("telegram", _telegram)
