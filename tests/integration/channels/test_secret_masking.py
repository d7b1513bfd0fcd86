"""No secret of a URL in any output (issue 32): a webhook whose URL holds a
password and a token fails; its error is stored masked, and show, history,
transcript and start print no secret, through the API and the real CLI."""

from __future__ import annotations

from typing import Any

from relay.runner.pulse import Pulse
from relay.testing import PHONE

SECRETS = ("PASSW0RD", "T0KEN")


def test_a_failing_webhook_url_s_secrets_are_masked_everywhere(
    make_relay: Any, db_url: str, http_endpoint: Any, cli: Any, tmp_path: Any
) -> None:
    port = http_endpoint.base_url.rsplit(":", 1)[1]
    url = f"http://user:PASSW0RD@127.0.0.1:{port}/x?token=T0KEN"
    for _ in range(10):
        http_endpoint.reply(400, "bad request")  # permanent: the conversation goes to a human
    (tmp_path / "relay.toml").write_text(
        f'[defaults]\nchannel = "hook"\n\n[channels.hook]\ntype = "webhook"\nurl = "{url}"\n'
    )
    relay = make_relay(db_url, None, **{"channels.hook.type": "webhook", "channels.hook.url": url})
    view = relay.start(PHONE, "the delivery", ["Which day?"], channel="hook")
    Pulse(relay, "d1").run()
    assert http_endpoint.requests, "the webhook was never called"
    with relay.store.transaction() as session:
        from sqlalchemy import select

        from relay.store.models import EventRow, Message

        stored = [m.last_error or "" for m in session.scalars(select(Message))]
        stored += [t.reason or "" for t in session.scalars(select(EventRow))]
    assert any("***" in text for text in stored), stored
    outputs = [
        str(relay.get(view.id).to_json()),
        str([h.to_json() for h in relay.history(view.id)]),
        str([m.to_json() for m in relay.transcript(view.id)]),
    ]
    for args in (
        ("show", view.id),
        ("show", view.id, "--json"),
        ("history", view.id),
        ("transcript", view.id, "--json"),
        ("start", "+15551230009", "--objective", "x", "--todo", "y", "--json"),
    ):
        result = cli(*args)
        outputs.append(result.stdout + result.stderr)
    for text in stored + outputs:
        assert not any(secret in text for secret in SECRETS), text
