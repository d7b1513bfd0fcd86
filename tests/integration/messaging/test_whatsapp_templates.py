"""A conversation's own WhatsApp template (``relay start --whatsapp-template``),
used instead of relay.toml's when the 24-hour window is closed; through the real
engine and the loopback Twilio API."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from messaging_fakes import ACCOUNT, FakeTwilio
from sqlalchemy import func, select

from relay.channels.base import Inbound, Incoming
from relay.core.errors import InvalidInput
from relay.runner.pulse import Pulse
from relay.store.models import Instance

NUMBER = "+15550002222"
PHONE = "+15551230001"
OWN = "HX" + "a" * 32
CHANNEL_SID = "HX" + "b" * 32


def settings(fake: FakeTwilio, **extra: Any) -> dict[str, Any]:
    whatsapp = {
        "type": "whatsapp",
        "account_sid": ACCOUNT,
        "auth_token_env": "TWILIO_TOKEN",
        "from": NUMBER,
        "public_url": "https://relay.example.org",
        "api_url": fake.base_url,
        "segments_per_second": 0,
    }
    sms = {"type": "sms", "account_sid": ACCOUNT, "auth_token_env": "TWILIO_TOKEN",
           "from": "+15550001111", "polling": True}  # fmt: skip
    base = {f"channels.whatsapp.{k}": v for k, v in whatsapp.items()}
    base.update({f"channels.sms.{k}": v for k, v in sms.items()})
    return {**base, **extra}


@pytest.fixture
def relay(make_relay: Callable[..., Any], db_url: str, twilio_api: FakeTwilio) -> Any:
    return make_relay(db_url, None, **settings(twilio_api))


def start(relay: Any, **options: Any) -> str:
    view = relay.start(PHONE, "Confirm", ["Which day?"], channel="whatsapp", **options)
    Pulse(relay, "test").run()
    return str(view.id)


def instances(relay: Any) -> int:
    with relay.store.transaction() as session:
        return int(session.scalar(select(func.count()).select_from(Instance)) or 0)


def test_the_conversations_template_goes_outside_the_window(
    relay: Any, twilio_api: FakeTwilio
) -> None:
    start(relay, template_sid=OWN, template_variables={"1": "Ann", "2": "{instance_id}"})
    [sent] = twilio_api.sent
    assert sent.form["ContentSid"] == OWN and "Body" not in sent.form
    variables = json.loads(sent.form["ContentVariables"])
    assert variables["1"] == "Ann" and len(variables["2"]) > 0


def test_it_is_preferred_to_relay_toml_and_borrows_its_variables(
    make_relay: Callable[..., Any], db_url: str, twilio_api: FakeTwilio
) -> None:
    extra = {
        "channels.whatsapp.template_sid": CHANNEL_SID,
        "channels.whatsapp.template_variables": {"1": "Hello: {text}"},
    }
    relay = make_relay(db_url, None, **settings(twilio_api, **extra))
    start(relay, template_sid=OWN)
    [sent] = twilio_api.sent
    assert sent.form["ContentSid"] == OWN
    assert json.loads(sent.form["ContentVariables"])["1"].startswith("Hello: ")


def test_inside_the_window_free_text_goes(relay: Any, twilio_api: FakeTwilio) -> None:
    now = datetime.now(UTC)
    relay.ingest("whatsapp", Incoming(messages=[Inbound(PHONE, "hi", now, "SMfirst")]))
    start(relay, template_sid=OWN)
    [sent] = twilio_api.sent
    assert "Body" in sent.form and "ContentSid" not in sent.form


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"template_sid": "HX123"}, "Content SID"),
        ({"template_variables": {"1": "Ann"}}, "need a template SID"),
        ({"template_sid": OWN, "template_variables": {"1": "{name}"}}, "{name} is not known"),
        ({"template_sid": OWN, "template_variables": {"1": "{"}}, "for braces"),
        ({"template_sid": OWN, "template_variables": {"a b": "x"}}, "expected a name"),
        ({"template_sid": OWN, "channel": "sms"}, "for whatsapp channels"),
    ],
)
def test_bad_templates_are_refused_and_nothing_is_written(
    relay: Any, options: dict[str, Any], error: str
) -> None:
    options = {"channel": "whatsapp", **options}
    with pytest.raises(InvalidInput) as caught:
        relay.start(PHONE, "Confirm", ["Which day?"], **options)
    assert error in caught.value.message
    assert instances(relay) == 0


def test_the_cli_flags(
    cli: Callable[..., Any], twilio_api: FakeTwilio, tmp_path: Path, db_url: str
) -> None:
    lines = [
        "[channels.whatsapp]",
        'type = "whatsapp"',
        f'account_sid = "{ACCOUNT}"',
        'auth_token_env = "TWILIO_TOKEN"',
        f'from = "{NUMBER}"',
        "polling = true",
        f'api_url = "{twilio_api.base_url}"',
    ]
    (tmp_path / "relay.toml").write_text("\n".join(lines) + "\n")
    args = ("start", PHONE, "-o", "Confirm", "-t", "Which day?", "--channel", "whatsapp")
    done = cli(*args, "--defer", "--whatsapp-template", OWN, "--template-var", "1=Ann", "--json")
    assert done.exit_code == 0, done
    bad = cli(*args, "--whatsapp-template", OWN, "--template-var", "Ann")
    assert bad.exit_code == 2 and bad.stderr.count("\n") == 1 and "--template-var" in bad.stderr
    from relay.store.database import Store, make_engine

    store = Store(make_engine(db_url))
    try:
        with store.transaction() as session:
            [template] = session.scalars(select(Instance.template)).all()
    finally:
        store.dispose()
    assert template == {"sid": OWN, "variables": {"1": "Ann"}}
