"""The webhook channel against a real HTTP server on loopback."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator

import pytest

from relay.channels.base import ChannelError, Incoming, PermanentChannelError, make_channel
from relay.channels.webhook import WebhookChannel
from relay.core.errors import ConfigError


@pytest.fixture
def channels() -> Iterator[list[WebhookChannel]]:
    """Closes every channel a test built, so no connection outlives its server."""
    built: list[WebhookChannel] = []
    yield built
    for channel in built:
        channel.close()


@pytest.fixture
def hook(http_endpoint, channels):
    def make(**settings) -> WebhookChannel:
        channel = make_channel("webhook", {"url": http_endpoint.url(), **settings})
        channels.append(channel)
        return channel

    return make


def test_send_posts_the_message_as_json_and_returns_the_endpoint_id(hook, http_endpoint, outbound):
    http_endpoint.reply(200, {"id": "wh-123"})

    provider_id = hook().send(outbound(text="Hi ✓"))

    assert provider_id == "wh-123"
    (request,) = http_endpoint.requests
    assert (request.method, request.path) == ("POST", "/hook")
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["Idempotency-Key"] == "msg-1-a1b2c3"
    assert "X-Relay-Signature" not in request.headers
    assert request.json() == {
        "to": "+15551230001",
        "text": "Hi ✓",
        "instance_id": "r7k2",
        "message_id": 1,
        "idempotency_key": "msg-1-a1b2c3",
    }


def test_message_id_field_is_accepted_as_the_provider_id(hook, http_endpoint, outbound):
    http_endpoint.reply(201, {"message_id": 77})

    assert hook().send(outbound()) == "77"


@pytest.mark.parametrize("reply", [(204, None), (200, "ok"), (200, {"status": "queued"})])
def test_without_an_id_the_idempotency_key_stands_in(hook, http_endpoint, outbound, reply):
    http_endpoint.reply(*reply)

    assert hook().send(outbound()) == "msg-1-a1b2c3"


def test_a_500_is_transient_and_the_retry_carries_the_same_key(hook, http_endpoint, outbound):
    http_endpoint.reply(500, "database down")
    http_endpoint.reply(200, {"id": "wh-9"})
    channel = hook()

    with pytest.raises(ChannelError) as failure:
        channel.send(outbound())
    assert failure.value.transient
    assert "500" in str(failure.value) and "database down" in str(failure.value)

    assert channel.send(outbound()) == "wh-9"
    keys = [r.headers["Idempotency-Key"] for r in http_endpoint.requests]
    assert keys == ["msg-1-a1b2c3", "msg-1-a1b2c3"]


@pytest.mark.parametrize("status", [408, 429, 502, 503])
def test_throttling_and_server_errors_are_transient(hook, http_endpoint, outbound, status):
    http_endpoint.reply(status)

    with pytest.raises(ChannelError) as failure:
        hook().send(outbound())

    assert failure.value.transient
    assert not isinstance(failure.value, PermanentChannelError)


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_other_client_errors_are_permanent(hook, http_endpoint, outbound, status):
    http_endpoint.reply(status, {"error": "bad number " + "x" * 500})

    with pytest.raises(PermanentChannelError) as failure:
        hook().send(outbound())

    message = str(failure.value)
    assert not failure.value.transient
    assert f"answered {status}" in message and "bad number" in message
    assert len(message) < 320


def test_the_body_is_signed_with_the_secret_named_by_secret_env(
    hook, http_endpoint, outbound, monkeypatch
):
    monkeypatch.setenv("RELAY_TEST_HOOK_SECRET", "s3cret")

    hook(secret_env="RELAY_TEST_HOOK_SECRET").send(outbound())

    (request,) = http_endpoint.requests
    expected = hmac.new(b"s3cret", request.body, hashlib.sha256).hexdigest()
    assert request.headers["X-Relay-Signature"] == f"sha256={expected}"


def test_a_missing_secret_fails_for_good_without_sending(
    hook, http_endpoint, outbound, monkeypatch
):
    monkeypatch.delenv("RELAY_TEST_HOOK_SECRET", raising=False)

    with pytest.raises(PermanentChannelError, match="RELAY_TEST_HOOK_SECRET"):
        hook(secret_env="RELAY_TEST_HOOK_SECRET").send(outbound())
    assert http_endpoint.requests == []


def test_connection_refused_is_transient(closed_port, outbound, channels):
    channel = WebhookChannel("webhook", f"http://127.0.0.1:{closed_port}/hook")
    channels.append(channel)

    with pytest.raises(ChannelError, match="unreachable") as failure:
        channel.send(outbound())
    assert failure.value.transient


def test_a_timeout_is_transient(http_endpoint, outbound, channels):
    channel = WebhookChannel("webhook", http_endpoint.url(), timeout=0.2)
    channels.append(channel)
    http_endpoint.gate.clear()  # the server holds the request until the client gives up

    with pytest.raises(ChannelError, match="timed out") as failure:
        channel.send(outbound())
    assert failure.value.transient


# --- poll ------------------------------------------------------------------------------------


def test_poll_without_poll_url_returns_nothing(hook, http_endpoint):
    assert hook().poll(None) == Incoming()
    assert http_endpoint.requests == []


def test_poll_reads_messages_from_poll_url(hook, http_endpoint):
    http_endpoint.reply(
        200,
        {
            "messages": [
                {"from": "+15551230001", "text": "yes", "id": "in-1"},
                {"from": "ann@example.com", "text": "no", "received_at": "2025-01-02T03:04:05Z"},
            ]
        },
    )

    incoming = hook(poll_url=http_endpoint.url("/inbox")).poll(None)
    messages = incoming.messages

    assert incoming.cursor is None
    assert [(m.sender, m.text, m.provider_message_id) for m in messages] == [
        ("+15551230001", "yes", "in-1"),
        ("ann@example.com", "no", None),
    ]
    assert messages[1].received_at.isoformat() == "2025-01-02T03:04:05+00:00"
    (request,) = http_endpoint.requests
    assert (request.method, request.path) == ("GET", "/inbox")


@pytest.mark.parametrize("body", ["not json", {"items": []}, {"messages": [{"text": "who?"}]}])
def test_poll_rejects_an_unexpected_body(hook, http_endpoint, body):
    http_endpoint.reply(200, body)

    with pytest.raises(ChannelError, match="unexpected body"):
        hook(poll_url=http_endpoint.url("/inbox")).poll(None)


def test_poll_passes_the_stored_cursor_and_returns_the_endpoints_next_one(hook, http_endpoint):
    http_endpoint.reply(200, {"messages": [{"from": "+15551230001", "text": "a"}], "cursor": "c7"})

    incoming = hook(poll_url=http_endpoint.url("/inbox")).poll("c6")

    assert incoming.cursor == "c7"
    (request,) = http_endpoint.requests
    assert request.path == "/inbox?cursor=c6"


def test_poll_server_error_is_a_channel_error(hook, http_endpoint):
    http_endpoint.reply(503)

    with pytest.raises(ChannelError, match="503"):
        hook(poll_url=http_endpoint.url("/inbox")).poll(None)


# --- settings --------------------------------------------------------------------------------


def test_timeout_setting_takes_durations_and_seconds():
    assert WebhookChannel.from_settings("w", {"url": "http://x", "timeout": "2m"}).timeout == 120
    assert WebhookChannel.from_settings("w", {"url": "http://x", "timeout": 3}).timeout == 3
    assert WebhookChannel.from_settings("w", {"url": "http://x"}).timeout == 10


@pytest.mark.parametrize(
    ("settings", "complaint"),
    [
        ({}, r"channels\.w\.url is required"),
        ({"url": "ftp://x"}, r"channels\.w\.url"),
        ({"url": "http://x", "poll_url": "x"}, r"channels\.w\.poll_url"),
        ({"url": "http://x", "timeout": "soon"}, r"channels\.w\.timeout"),
        ({"url": "http://x", "timeout": 0}, r"channels\.w\.timeout"),
    ],
)
def test_bad_settings_are_config_errors(settings, complaint):
    with pytest.raises(ConfigError, match=complaint):
        WebhookChannel.from_settings("w", settings)
