"""The fake Twilio and Telegram APIs (loopback HTTP servers) the messaging tests
talk to, with the credentials relay.toml names in the environment."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from messaging_fakes import BOT_TOKEN, TOKEN, FakeTelegram, FakeTwilio, fake_telegram, fake_twilio


@pytest.fixture
def twilio_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTwilio]:
    monkeypatch.setenv("TWILIO_TOKEN", TOKEN)
    with fake_twilio() as fake:
        yield fake


@pytest.fixture
def bot_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTelegram]:
    monkeypatch.setenv("BOT_TOKEN", BOT_TOKEN)
    with fake_telegram() as fake:
        yield fake
