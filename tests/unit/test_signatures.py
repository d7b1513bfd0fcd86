"""Request signatures and segment counting: relay's own code against the SDK's and the specs."""

from __future__ import annotations

import pytest
from messaging_fakes import TOKEN, sign

from relay.channels import twilio_signature, webhook
from relay.channels.segments import segment_count

URL = "https://relay.example.org/twilio/sms/inbound"
PARAMS = {
    "From": "+15551230001",
    "To": "+15550001111",
    "Body": "Yes, Thursday",
    "MessageSid": "SM1",
}


def test_twilio_signature_matches_the_sdk() -> None:
    signature = sign(URL, PARAMS)
    assert twilio_signature.verify(TOKEN, URL, PARAMS.items(), signature)


def test_twilio_signature_with_the_port_spelled_out_is_accepted() -> None:
    signature = sign("https://relay.example.org:443/twilio/sms/inbound", PARAMS)
    assert twilio_signature.verify(TOKEN, URL, PARAMS.items(), signature)


@pytest.mark.parametrize(
    ("url", "params", "token"),
    [
        (URL, {**PARAMS, "Body": "STOP"}, TOKEN),  # a changed parameter
        (URL + "x", PARAMS, TOKEN),  # another URL
        (URL, PARAMS, "another-token"),  # another account
    ],
)
def test_twilio_signature_refuses_anything_changed(url: str, params: dict, token: str) -> None:
    signature = sign(URL, PARAMS)
    assert not twilio_signature.verify(token, url, params.items(), signature)


def test_twilio_signature_sha256_when_the_settings_header_says_so() -> None:
    from twilio.request_validator import RequestValidator

    signature = RequestValidator(TOKEN).compute_signature(URL, PARAMS, "HMAC_SHA256")
    header = "key=webhooks_sharedkey_1,algorithm=HMAC_SHA256"
    assert twilio_signature.verify(TOKEN, URL, PARAMS.items(), signature, header)
    assert not twilio_signature.verify(TOKEN, URL, PARAMS.items(), signature)
    assert not twilio_signature.verify(TOKEN, URL, PARAMS.items(), None)


def test_webhook_inbound_signature_and_freshness() -> None:
    body = b'{"from": "+15551230001", "text": "hi", "id": "w1"}'
    signature = webhook.sign_inbound("s3cret", 1_700_000_000, body)
    ok = webhook.verify_inbound
    assert ok("s3cret", "1700000000", signature, body, now=1_700_000_100) is None
    assert "window" in ok("s3cret", "1700000000", signature, body, now=1_700_001_000)
    assert "match" in ok("s3cret", "1700000000", signature, body + b" ", now=1_700_000_000)
    assert "match" in ok("s3cret", "1700000001", signature, body, now=1_700_000_000)
    assert "missing" in ok("s3cret", None, signature, body, now=1_700_000_000)


@pytest.mark.parametrize(
    ("text", "segments"),
    [
        ("", 1),
        ("a" * 160, 1),
        ("a" * 161, 2),
        ("a" * 306, 2),
        ("a" * 307, 3),
        ("[" * 80, 1),  # extension characters take two septets
        ("[" * 81, 2),
        ("é" * 160, 1),  # é is in the GSM alphabet
        ("ł" * 70, 1),  # ł is not: UCS-2
        ("ł" * 71, 2),
        ("🙂" * 35, 1),  # an emoji is two UTF-16 units
        ("🙂" * 36, 2),
    ],
)
def test_segment_count(text: str, segments: int) -> None:
    assert segment_count(text) == segments
