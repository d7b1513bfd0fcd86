"""The channel registry: built-ins and third-party channels come through one mechanism."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import pytest

from relay.channels import base
from relay.channels.base import Incoming, Outbound, channel_kinds, make_channel
from relay.channels.console import ConsoleChannel
from relay.channels.email import EmailChannel
from relay.channels.webhook import WebhookChannel
from relay.core.errors import ConfigError


def test_builtin_kinds_are_registered():
    assert {"console", "email", "webhook"} <= set(channel_kinds())


def test_the_section_name_is_the_type_unless_type_says_otherwise(data_dir):
    assert isinstance(make_channel("console", {"_data_dir": str(data_dir)}), ConsoleChannel)
    sales = make_channel("sales-mail", {"type": "email", "host": "h", "from": "a@b.c"})
    assert isinstance(sales, EmailChannel) and sales.name == "sales-mail"
    assert isinstance(make_channel("webhook", {"url": "http://x"}), WebhookChannel)


def test_every_builtin_kind_builds_its_own_backend():
    """The built-ins are named ``module:attr`` (as entry points are), loaded when first built."""
    from relay.channels.telegram import TelegramChannel
    from relay.channels.twilio import TwilioChannel

    twilio = {"account_sid": "AC1", "auth_token_env": "T", "from": "+15550001111"}
    for kind in ("sms", "whatsapp"):
        channel = make_channel(f"my-{kind}", {"type": kind, **twilio})
        assert isinstance(channel, TwilioChannel) and channel.kind == kind
        assert channel.name == f"my-{kind}"
    assert isinstance(make_channel("telegram", {"token_env": "T"}), TelegramChannel)
    assert set(base.BUILTIN_CHANNELS) <= set(channel_kinds())


def test_an_unknown_type_names_the_known_ones():
    with pytest.raises(ConfigError, match=r"unknown channel type 'carrier-pigeon'.*console"):
        make_channel("birds", {"type": "carrier-pigeon"})


def test_registering_builtins_imports_no_transport_library():
    code = (
        "import sys; from relay.channels.base import channel_kinds; channel_kinds(); "
        "print(sorted(m for m in ('httpx', 'smtplib', 'ssl') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


class Pigeon:
    def __init__(self, name: str, settings: dict) -> None:
        self.name = name
        self.settings = settings

    def send(self, message: Outbound) -> str:
        return "coo-" + message.idempotency_key

    def poll(self, cursor: str | None) -> Incoming:
        return Incoming()


def test_a_third_party_channel_registers_through_an_entry_point(monkeypatch):
    entry = metadata.EntryPoint(name="pigeon", value=f"{__name__}:Pigeon", group="relay.channels")
    real = metadata.entry_points

    def entry_points(**params):
        if params.get("group") == "relay.channels":
            return metadata.EntryPoints([entry])
        return real(**params)

    monkeypatch.setattr(metadata, "entry_points", entry_points)
    registry = base.AGENTS if "agents" in base.__name__ else base.CHANNELS
    registry.names()  # load the built-ins first: the copy must hold them when restored
    monkeypatch.setattr(registry, "_factories", dict(registry._factories))
    monkeypatch.setattr(registry, "_entry_points_loaded", False)

    channel = make_channel("loft", {"type": "pigeon", "range": "3km"})

    assert isinstance(channel, Pigeon) and channel.name == "loft"
    assert channel.send(Outbound(1, None, "+1", "hi", "k")) == "coo-k"
    assert "pigeon" in channel_kinds()
