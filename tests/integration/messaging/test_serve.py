"""``relay serve``'s routes, in process (Starlette's TestClient) on a real store."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from messaging_fakes import ACCOUNT, TOKEN, sign
from sqlalchemy import func, select

from relay.channels import telegram, webhook
from relay.runner.pulse import take_all
from relay.store.models import Message

PUBLIC = "https://relay.example.org"
NUMBER = "+15550001111"
PHONE = "+15551230001"
HOOK_SECRET = "hook-secret"
TG_SECRET = "tg-secret"

CHANNELS = {
    "channels.sms.type": "sms",
    "channels.sms.account_sid": ACCOUNT,
    "channels.sms.auth_token_env": "TWILIO_TOKEN",
    "channels.sms.from": NUMBER,
    "channels.sms.public_url": PUBLIC,
    "channels.sms.help_text": "Depot deliveries. Reply STOP to opt out.",
    "channels.hook.type": "webhook",
    "channels.hook.url": "http://127.0.0.1:9/unused",
    "channels.hook.secret_env": "HOOK_SECRET",
    "channels.tg.type": "telegram",
    "channels.tg.token_env": "BOT_TOKEN",
    "channels.tg.webhook_secret_env": "TG_SECRET",
    "channels.tg.bot_username": "depot_bot",
}


@pytest.fixture
def served(
    make_relay: Callable[..., Any], db_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Any, Any]]:
    """The app on uvicorn in a thread, on a free loopback port; an httpx client for it."""
    import uvicorn

    from relay.runner.serve import build_app

    monkeypatch.setenv("TWILIO_TOKEN", TOKEN)
    monkeypatch.setenv("HOOK_SECRET", HOOK_SECRET)
    monkeypatch.setenv("TG_SECRET", TG_SECRET)
    relay = make_relay(db_url, None, **CHANNELS)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = uvicorn.Config(
        build_app(relay, max_body=4096), host="127.0.0.1", port=port, log_level="warning",
        lifespan="off",
    )  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    # The server stores what was pushed and answers; the daemon takes it in. Each
    # answered request is taken at once here, as a daemon's pulse would.
    hooks = {"response": [lambda _: take_all(relay, 100)]}
    try:
        with httpx.Client(
            base_url=f"http://127.0.0.1:{port}", timeout=10, event_hooks=hooks
        ) as client:
            yield relay, client
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def inbound_count(relay: Any) -> int:
    with relay.store.transaction() as session:
        query = select(func.count()).select_from(Message).where(Message.direction == "inbound")
        return int(session.scalar(query) or 0)


def twilio_post(client: Any, path: str, params: dict[str, str], signature: str | None = None):
    sig = sign(PUBLIC + path, params) if signature is None else signature
    headers = {"X-Twilio-Signature": sig} if sig else {}
    return client.post(path, data=params, headers=headers)


def sms(body: str, sid: str = "SM1") -> dict[str, str]:
    return {"From": PHONE, "To": NUMBER, "Body": body, "MessageSid": sid, "AccountSid": ACCOUNT}


def test_a_signed_reply_is_stored_once(served: tuple[Any, Any]) -> None:
    relay, client = served
    first = twilio_post(client, "/twilio/sms/inbound", sms("Thursday works"))
    assert first.status_code == 200 and first.text.endswith("<Response/>")
    again = twilio_post(client, "/twilio/sms/inbound", sms("Thursday works"))
    assert again.status_code == 200
    assert inbound_count(relay) == 1
    # An unknown sender is kept and listed, not dropped.
    assert [m.text for m in relay.contact(PHONE).unrouted] == ["Thursday works"]


@pytest.mark.parametrize("signature", ["", "bm90IGEgc2lnbmF0dXJl"])
def test_an_unsigned_or_forged_request_is_refused_and_stores_nothing(
    served: tuple[Any, Any], signature: str, caplog: pytest.LogCaptureFixture
) -> None:
    relay, client = served
    answer = twilio_post(client, "/twilio/sms/inbound", sms("secret text"), signature)
    assert answer.status_code == 403
    assert inbound_count(relay) == 0
    assert "secret text" not in caplog.text and "X-Twilio-Signature" in caplog.text


def test_help_gets_the_help_text_and_is_not_stored(served: tuple[Any, Any]) -> None:
    relay, client = served
    answer = twilio_post(client, "/twilio/sms/inbound", sms("help"))
    assert "<Message>Depot deliveries. Reply STOP to opt out.</Message>" in answer.text
    assert inbound_count(relay) == 0


@pytest.mark.parametrize("word", ["STOP", "quit", "Cancel"])
def test_carrier_stop_words_opt_out(served: tuple[Any, Any], word: str) -> None:
    relay, client = served
    assert twilio_post(client, "/twilio/sms/inbound", sms(word)).status_code == 200
    assert relay.contact(PHONE).opted_out_at is not None


def test_start_opts_back_in(served: tuple[Any, Any]) -> None:
    relay, client = served
    twilio_post(client, "/twilio/sms/inbound", sms("STOP", "SM1"))
    twilio_post(client, "/twilio/sms/inbound", sms("START", "SM2"))
    assert relay.contact(PHONE).opted_out_at is None


def test_status_callback_for_an_unknown_message_is_accepted(served: tuple[Any, Any]) -> None:
    _, client = served
    params = {"MessageSid": "SMnone", "MessageStatus": "delivered", "AccountSid": ACCOUNT}
    assert twilio_post(client, "/twilio/sms/status", params).status_code == 200
    assert twilio_post(client, "/twilio/sms/status", params, "forged").status_code == 403


def test_unknown_channel_and_wrong_type_are_404(served: tuple[Any, Any]) -> None:
    _, client = served
    assert twilio_post(client, "/twilio/nope/inbound", sms("x")).status_code == 404
    assert twilio_post(client, "/twilio/hook/inbound", sms("x")).status_code == 404


def test_a_body_over_the_limit_is_refused(served: tuple[Any, Any]) -> None:
    relay, client = served
    answer = twilio_post(client, "/twilio/sms/inbound", sms("x" * 5000))
    assert answer.status_code == 413 and inbound_count(relay) == 0


def signed_webhook(body: bytes, stamp: int | None = None, secret: str = HOOK_SECRET) -> dict:
    stamp = int(time.time()) if stamp is None else stamp
    return {
        webhook.TIMESTAMP_HEADER: str(stamp),
        webhook.SIGNATURE_HEADER: webhook.sign_inbound(secret, stamp, body),
        "Content-Type": "application/json",
    }


def test_generic_webhook_inbound(served: tuple[Any, Any]) -> None:
    relay, client = served
    body = json.dumps({"from": PHONE, "text": "Yes please", "id": "w-1"}).encode()
    assert client.post("/webhook/hook/inbound", content=body, headers=signed_webhook(body)).json()
    client.post("/webhook/hook/inbound", content=body, headers=signed_webhook(body))
    assert inbound_count(relay) == 1
    stale = signed_webhook(body, int(time.time()) - 3600)
    assert client.post("/webhook/hook/inbound", content=body, headers=stale).status_code == 403
    forged = signed_webhook(body, secret="guess")
    assert client.post("/webhook/hook/inbound", content=body, headers=forged).status_code == 403
    bad = b'{"text": "no sender"}'
    assert (
        client.post("/webhook/hook/inbound", content=bad, headers=signed_webhook(bad)).status_code
        == 400
    )


def test_telegram_webhook_needs_the_secret_token(served: tuple[Any, Any]) -> None:
    relay, client = served
    update = {"update_id": 5, "message": {"message_id": 1, "date": 1_700_000_000,
                                          "chat": {"id": 4242}, "text": "hi"}}  # fmt: skip
    refused = client.post("/telegram/tg/webhook", json=update)
    assert refused.status_code == 403 and inbound_count(relay) == 0
    headers = {telegram.SECRET_HEADER: TG_SECRET}
    assert client.post("/telegram/tg/webhook", json=update, headers=headers).status_code == 200
    assert client.post("/telegram/tg/webhook", json=update, headers=headers).status_code == 200
    assert [m.text for m in relay.contact("telegram:4242").unrouted] == ["hi"]


def test_telegram_webhook_start_binds_the_chat(served: tuple[Any, Any]) -> None:
    """The webhook takes the path a poll takes: ``/start <token>`` binds, stores nothing."""
    relay, client = served
    token = relay.contact_link("tg", PHONE).link.rpartition("start=")[2]
    message = {"message_id": 2, "date": 1_700_000_000, "chat": {"id": 4242}}
    update = {"update_id": 6, "message": {**message, "text": f"/start {token}"}}
    headers = {telegram.SECRET_HEADER: TG_SECRET}
    assert client.post("/telegram/tg/webhook", json=update, headers=headers).status_code == 200
    assert relay.contact_link("tg", PHONE).bound_to == "telegram:4242"
    assert inbound_count(relay) == 0


def test_one_click_unsubscribe(served: tuple[Any, Any]) -> None:
    from relay.engine.contacts.unsubscribe import tokens

    relay, client = served
    view = relay.start(PHONE, "Confirm the delivery", ["Which day?"], channel="sms")
    with relay.store.transaction() as session:
        contact_id = session.scalar(select(Message.contact_id).limit(1)) or 1
        token = tokens(session, relay.now()).make(contact_id, view.id)
    assert client.get(f"/unsubscribe/{token}").status_code == 200  # a form only
    assert relay.contact(PHONE).opted_out_at is None
    forged = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
    assert client.post(f"/unsubscribe/{forged}").status_code == 404
    done = client.post(f"/unsubscribe/{token}", data={"List-Unsubscribe": "One-Click"})
    assert done.status_code == 200
    assert relay.contact(PHONE).opted_out_at is not None
    assert relay.get(view.id).state != "ACTIVE"


def test_healthz(served: tuple[Any, Any]) -> None:
    _, client = served
    answer = client.get("/healthz")
    assert answer.status_code == 200 and answer.json()["ok"] is True


def test_yes_opts_back_in_after_stop(served: tuple[Any, Any]) -> None:
    relay, client = served
    twilio_post(client, "/twilio/sms/inbound", sms("STOP", "SM1"))
    twilio_post(client, "/twilio/sms/inbound", sms("YES", "SM2"))
    assert relay.contact(PHONE).opted_out_at is None


def test_read_commands_do_not_import_the_http_stack() -> None:
    """`relay list` must start fast: starlette, uvicorn and twilio load only for serve."""
    import subprocess
    import sys

    code = (
        "import sys; from relay.cli.main import app; from typer.testing import CliRunner; "
        "CliRunner().invoke(app, ['list']); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'starlette', 'uvicorn', 'twilio'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_nul_in_a_message_sid_is_stored_cleaned_and_the_next_reply_too(
    served: tuple[Any, Any],
) -> None:
    """Issue 32: a NUL (PostgreSQL text cannot hold one) made serve answer 500 for ever."""
    relay, client = served
    poisoned = twilio_post(client, "/twilio/sms/inbound", sms("Thu\x00rsday", "SM\x00bad"))
    assert poisoned.status_code == 200
    again = twilio_post(client, "/twilio/sms/inbound", sms("Thu\x00rsday", "SM\x00bad"))
    assert again.status_code == 200
    assert twilio_post(client, "/twilio/sms/inbound", sms("Friday", "SM2")).status_code == 200
    texts = [m.text for m in relay.contact(PHONE).unrouted]
    assert texts == ["Thursday", "Friday"]
    with relay.store.transaction() as session:
        ids = session.scalars(select(Message.provider_message_id).order_by(Message.id)).all()
    assert list(ids) == ["SMbad", "SM2"]


def test_a_webhook_with_nul_and_broken_text_is_stored_and_the_next_too(
    served: tuple[Any, Any],
) -> None:
    relay, client = served
    odd = json.dumps({"from": PHONE, "text": "a\x00b \ud800 c", "id": "w\x00-1"}).encode()
    answer = client.post("/webhook/hook/inbound", content=odd, headers=signed_webhook(odd))
    assert answer.status_code == 200
    good = json.dumps({"from": PHONE, "text": "Yes please", "id": "w-2"}).encode()
    assert client.post("/webhook/hook/inbound", content=good, headers=signed_webhook(good))
    assert [m.text for m in relay.contact(PHONE).unrouted] == ["ab \ufffd c", "Yes please"]


def unsubscribe_token(relay: Any) -> tuple[str, str]:
    from relay.engine.contacts.unsubscribe import tokens

    view = relay.start(PHONE, "Confirm the delivery", ["Which day?"], channel="sms")
    with relay.store.transaction() as session:
        contact_id = session.scalar(select(Message.contact_id).limit(1)) or 1
        return tokens(session, relay.now()).make(contact_id, view.id), view.id


def test_head_and_get_on_an_unsubscribe_link_opt_nobody_out(served: tuple[Any, Any]) -> None:
    """Link scanners send HEAD as well as GET; only a POST (RFC 8058) unsubscribes."""
    relay, client = served
    token, _ = unsubscribe_token(relay)
    assert client.head(f"/unsubscribe/{token}").status_code == 200
    assert client.get(f"/unsubscribe/{token}").status_code == 200
    assert relay.contact(PHONE).opted_out_at is None
    assert inbound_count(relay) == 0


def test_an_old_unsubscribe_link_after_an_opt_in_opts_out_again(served: tuple[Any, Any]) -> None:
    relay, client = served
    token, _ = unsubscribe_token(relay)
    assert client.post(f"/unsubscribe/{token}").status_code == 200
    assert relay.contact(PHONE).opted_out_at is not None
    relay.opt_in(PHONE)
    assert relay.contact(PHONE).opted_out_at is None
    assert client.post(f"/unsubscribe/{token}").status_code == 200
    assert relay.contact(PHONE).opted_out_at is not None


def test_a_push_without_a_provider_id_retried_is_stored_once(served: tuple[Any, Any]) -> None:
    relay, client = served
    body = json.dumps({"from": PHONE, "text": "No id here"}).encode()
    for _ in range(3):
        answer = client.post("/webhook/hook/inbound", content=body, headers=signed_webhook(body))
        assert answer.status_code == 200
    form = {"From": PHONE, "To": NUMBER, "Body": "No sid", "AccountSid": ACCOUNT}
    for _ in range(2):
        assert twilio_post(client, "/twilio/sms/inbound", form).status_code == 200
    assert inbound_count(relay) == 2


def test_a_stop_opts_out_before_its_answer_and_a_reply_waits_for_the_daemon(
    served: tuple[Any, Any],
) -> None:
    """A STOP is not left among the pushes for a daemon to take: it is ingested
    before it is answered (so no send starts after the answer), while an ordinary
    reply stays a stored push until a daemon takes it in."""
    from relay.store import pushes

    relay, client = served
    client.event_hooks = {"request": [], "response": []}  # no daemon takes pushes

    def waiting() -> int:
        with relay.store.transaction() as session:
            return pushes.backlog(session)[0]

    reply = twilio_post(client, "/twilio/sms/inbound", sms("Thursday works", "SM1"))
    assert reply.status_code == 200
    assert (waiting(), inbound_count(relay)) == (1, 0)
    stop = twilio_post(client, "/twilio/sms/inbound", sms("STOP", "SM2"))
    assert stop.status_code == 200 and stop.text.endswith("<Response/>")
    assert relay.contact(PHONE).opted_out_at is not None
    assert (waiting(), inbound_count(relay)) == (1, 1)
