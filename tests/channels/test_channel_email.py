"""The email channel against a real SMTP server (aiosmtpd) on loopback."""

from __future__ import annotations

from email import message_from_bytes
from email.policy import default as default_policy

import pytest

from relay.channels.base import ChannelError, Incoming, PermanentChannelError, make_channel
from relay.channels.email import EmailChannel, message_id_for
from relay.core.errors import ConfigError

ANN = "ann@example.com"


@pytest.fixture
def mail(smtp_server):
    def make(**settings) -> EmailChannel:
        base = {"host": smtp_server.host, "port": smtp_server.port, "from": "relay@example.org"}
        return make_channel("sales-mail", {"type": "email", **base, **settings})

    return make


def test_delivers_a_message_the_server_can_read(mail, smtp_server, outbound):
    provider_id = mail().send(outbound(to=ANN, text="Hello Ann,\nare you free on Monday?"))

    assert provider_id == "<msg-1-a1b2c3@relay>"
    (received,) = smtp_server.messages
    assert received.mail_from == "relay@example.org"
    assert received.rcpt_tos == [ANN]
    email = message_from_bytes(received.content, policy=default_policy)
    assert email["To"] == ANN
    assert email["From"] == "relay@example.org"
    assert email["Message-ID"] == provider_id
    assert email["Subject"] == "Message from relay"
    assert email["X-Relay-Instance"] == "r7k2"
    assert email["Date"]
    # SMTP carries CRLF line ends; the text is the same.
    assert email.get_content().replace("\r\n", "\n") == "Hello Ann,\nare you free on Monday?\n"


def test_a_retry_carries_the_same_message_id(mail, smtp_server, outbound):
    channel = mail()
    channel.send(outbound(to=ANN))
    channel.send(outbound(to=ANN))

    ids = [message_from_bytes(m.content)["Message-ID"] for m in smtp_server.messages]
    assert ids == ["<msg-1-a1b2c3@relay>"] * 2


def test_subject_is_a_template(mail, smtp_server, outbound):
    mail(subject="About our chat ({instance_id})").send(outbound(to=ANN))

    assert message_from_bytes(smtp_server.messages[0].content)["Subject"] == "About our chat (r7k2)"


def test_logs_in_with_the_password_named_by_password_env(mail, smtp_server, outbound, monkeypatch):
    smtp_server.logins[b"relay"] = b"s3cret"
    monkeypatch.setenv("RELAY_TEST_SMTP_PASSWORD", "s3cret")

    mail(username="relay", password_env="RELAY_TEST_SMTP_PASSWORD").send(outbound(to=ANN))

    assert smtp_server.messages[0].authenticated


def test_a_wrong_password_is_permanent(mail, smtp_server, outbound, monkeypatch):
    smtp_server.logins[b"relay"] = b"s3cret"
    monkeypatch.setenv("RELAY_TEST_SMTP_PASSWORD", "wrong")

    with pytest.raises(PermanentChannelError, match="535"):
        mail(username="relay", password_env="RELAY_TEST_SMTP_PASSWORD").send(outbound(to=ANN))
    assert smtp_server.messages == []


def test_an_unset_password_variable_is_permanent(mail, outbound, monkeypatch):
    monkeypatch.delenv("RELAY_TEST_SMTP_PASSWORD", raising=False)

    with pytest.raises(PermanentChannelError, match="RELAY_TEST_SMTP_PASSWORD"):
        mail(username="relay", password_env="RELAY_TEST_SMTP_PASSWORD").send(outbound(to=ANN))


def test_a_rejected_recipient_is_permanent(mail, smtp_server, outbound):
    smtp_server.rcpt_replies[ANN] = "550 5.1.1 No such user"

    with pytest.raises(PermanentChannelError, match="550") as failure:
        mail().send(outbound(to=ANN))
    assert not failure.value.transient
    assert "No such user" in str(failure.value)


def test_a_greylisted_recipient_is_transient(mail, smtp_server, outbound):
    smtp_server.rcpt_replies[ANN] = "451 4.7.1 Greylisted, try again later"

    with pytest.raises(ChannelError, match="451") as failure:
        mail().send(outbound(to=ANN))
    assert failure.value.transient


@pytest.mark.parametrize(("reply", "transient"), [("554 5.6.0 Spam", False), ("452 Full", True)])
def test_a_refused_body_is_classified_by_its_code(mail, smtp_server, outbound, reply, transient):
    smtp_server.data_reply = reply

    with pytest.raises(ChannelError) as failure:
        mail().send(outbound(to=ANN))
    assert failure.value.transient is transient


def test_connection_refused_is_transient(closed_port, outbound):
    channel = EmailChannel("email", "127.0.0.1", "relay@example.org", port=closed_port)

    with pytest.raises(ChannelError) as failure:
        channel.send(outbound(to=ANN))
    assert failure.value.transient


def test_starttls_against_a_server_without_it_is_permanent(mail, smtp_server, outbound):
    with pytest.raises(PermanentChannelError, match="STARTTLS"):
        mail(starttls=True).send(outbound(to=ANN))
    assert smtp_server.messages == []


def test_a_phone_number_is_refused_before_connecting(closed_port, outbound):
    channel = EmailChannel("email", "127.0.0.1", "relay@example.org", port=closed_port)

    with pytest.raises(PermanentChannelError, match="cannot reach a phone number"):
        channel.send(outbound(to="+15551230001"))


def test_a_header_injection_attempt_is_permanent(mail, smtp_server, outbound):
    with pytest.raises(PermanentChannelError, match="cannot build email"):
        mail().send(outbound(to="ann@example.com\r\nBcc: all@example.com"))
    assert smtp_server.messages == []


def test_poll_returns_nothing(mail):
    assert mail().poll(None) == Incoming()


# --- settings --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "port"),
    [({}, 25), ({"starttls": True}, 587), ({"ssl": "true"}, 465), ({"port": "2525"}, 2525)],
)
def test_default_port_follows_the_tls_mode(extra, port):
    settings = {"host": "mail.example.org", "from": "relay@example.org", **extra}

    assert EmailChannel.from_settings("email", settings).port == port


@pytest.mark.parametrize(
    ("extra", "complaint"),
    [
        ({"host": ""}, r"channels\.email\.host is required"),
        ({"from": None}, r"channels\.email\.from is required"),
        ({"ssl": True, "starttls": True}, "not both"),
        ({"username": "relay"}, "password_env"),
        ({"port": "smtp"}, r"channels\.email\.port"),
        ({"subject": "Hi {name}"}, "placeholders"),
        ({"timeout": "a while"}, r"channels\.email\.timeout"),
    ],
)
def test_bad_settings_are_config_errors(extra, complaint):
    settings = {"host": "mail.example.org", "from": "relay@example.org", **extra}

    with pytest.raises(ConfigError, match=complaint):
        EmailChannel.from_settings("email", settings)


def test_message_id_keeps_only_characters_a_msg_id_can_hold():
    assert message_id_for("msg-42-ab_c+=") == "<msg-42-ab_c+=@relay>"
    assert message_id_for("a b<c>@d") == "<a-b-c--d@relay>"
