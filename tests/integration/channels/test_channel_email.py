"""The email channel against a real SMTP server (aiosmtpd) on loopback."""

from __future__ import annotations

from email import message_from_bytes
from email.policy import default as default_policy

import pytest

from relay.channels.base import ChannelError, Outbound, PermanentChannelError, make_channel
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


def test_without_imap_poll_returns_nothing_and_keeps_the_cursor(mail):
    incoming = mail().poll("kept")
    assert list(incoming.messages) == [] and list(incoming.receipts) == []
    assert incoming.cursor == "kept"


# --- threading, identity, unsubscribe ----------------------------------------------------------


def sent(smtp_server, index: int = -1):
    return message_from_bytes(smtp_server.messages[index].content, policy=default_policy)


def test_the_first_message_has_the_conversation_subject_and_no_thread(mail, smtp_server):
    mail().send(Outbound(1, "r7k2", ANN, "Hello", "k1", subject="Delivery of order 1042"))

    email = sent(smtp_server)
    assert email["Subject"] == "Delivery of order 1042"
    assert email["In-Reply-To"] is None and email["References"] is None


def test_later_messages_reply_in_the_thread(mail, smtp_server):
    thread = ("<k1@relay>", "CAF-reply@mail.gmail.com", "<k2@relay>")
    mail().send(Outbound(3, "r7k2", ANN, "Thanks", "k3", thread=thread, subject="Delivery"))

    email = sent(smtp_server)
    assert email["Subject"] == "Re: Delivery"
    assert email["In-Reply-To"] == "<k2@relay>"
    assert email["References"] == "<k1@relay> <CAF-reply@mail.gmail.com> <k2@relay>"
    assert email["Message-ID"] == "<k3@relay>"


def test_a_subject_that_already_says_re_is_not_doubled(mail, smtp_server):
    mail().send(Outbound(3, "r7k2", ANN, "x", "k3", thread=("<k1@relay>",), subject="Re: Hi"))
    assert sent(smtp_server)["Subject"] == "Re: Hi"


def test_a_long_thread_keeps_the_first_and_the_latest_references(mail, smtp_server):
    thread = tuple(f"<m{n}@relay>" for n in range(40))
    mail().send(Outbound(41, "r7k2", ANN, "x", "k41", thread=thread, subject="S"))
    references = str(sent(smtp_server)["References"]).split()
    assert len(references) == 20
    assert references[0] == "<m0@relay>" and references[-1] == "<m39@relay>"


def test_from_name_reply_to_and_signature(mail, smtp_server):
    channel = mail(
        from_name="Ana from the Depot",
        reply_to="desk@example.org",
        signature="Ana Lopez\nDepot team",
    )
    channel.send(Outbound(1, "r7k2", ANN, "Hello Ann", "k1", subject="S"))

    email = sent(smtp_server)
    assert email["From"] == "Ana from the Depot <relay@example.org>"
    assert email["Reply-To"] == "desk@example.org"
    body = email.get_content().replace("\r\n", "\n")
    assert body == "Hello Ann\n\n-- \nAna Lopez\nDepot team\n"
    assert smtp_server.messages[-1].mail_from == "relay@example.org"


def test_list_unsubscribe_has_a_mailto_always(mail, smtp_server):
    mail().send(Outbound(1, "r7k2", ANN, "Hello", "k1"))

    email = sent(smtp_server)
    assert email["List-Unsubscribe"] == "<mailto:relay+unsubscribe@example.org?subject=unsubscribe>"
    assert email["List-Unsubscribe-Post"] is None  # one-click needs an https URL


def test_one_click_unsubscribe_with_an_https_url_and_a_token(mail, smtp_server):
    channel = mail(
        unsubscribe_mailto="leave@example.org", unsubscribe_url="https://relay.example.org/"
    )
    channel.send(Outbound(1, "r7k2", ANN, "Hello", "k1", unsubscribe_token="tok123"))

    email = sent(smtp_server)
    assert email["List-Unsubscribe"] == (
        "<mailto:leave@example.org?subject=unsubscribe>, "
        "<https://relay.example.org/unsubscribe/tok123>"
    )
    assert email["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"


def test_an_http_unsubscribe_url_is_a_config_error():
    with pytest.raises(ConfigError, match="https"):
        make_channel("email", {"host": "h", "from": "a@b.c", "unsubscribe_url": "http://x"})


def test_check_and_address_problem(monkeypatch):
    monkeypatch.delenv("RELAY_TEST_SMTP_PASSWORD", raising=False)
    monkeypatch.delenv("RELAY_TEST_IMAP_PASSWORD", raising=False)
    channel = make_channel(
        "email",
        {
            "host": "h",
            "from": "a@b.c",
            "username": "a",
            "password_env": "RELAY_TEST_SMTP_PASSWORD",
            "imap_host": "imap.b.c",
            "imap_password_env": "RELAY_TEST_IMAP_PASSWORD",
        },
    )
    problems = channel.check()
    assert any("RELAY_TEST_SMTP_PASSWORD" in p for p in problems)
    assert any("RELAY_TEST_IMAP_PASSWORD" in p for p in problems)
    monkeypatch.setenv("RELAY_TEST_SMTP_PASSWORD", "x")
    monkeypatch.setenv("RELAY_TEST_IMAP_PASSWORD", "y")
    assert channel.check() == []
    problem = channel.address_problem("+15551230001")
    assert problem == "the email channel cannot reach a phone number"
    assert channel.address_problem(ANN) is None


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({}, (993, True, False, "a", "RELAY_SMTP", "INBOX")),
        ({"imap_starttls": True}, (143, False, True, "a", "RELAY_SMTP", "INBOX")),
        (
            {
                "imap_ssl": False,
                "imap_port": "1143",
                "imap_username": "b",
                "imap_password_env": "RELAY_IMAP",
                "imap_mailbox": "Relay",
            },
            (1143, False, False, "b", "RELAY_IMAP", "Relay"),
        ),
    ],
)
def test_imap_settings_default_to_the_smtp_login(extra, expected):
    channel = make_channel(
        "email",
        {
            "host": "h",
            "from": "a@b.c",
            "username": "a",
            "password_env": "RELAY_SMTP",
            "imap_host": "imap.b.c",
            **extra,
        },
    )
    imap = channel.imap
    assert (
        imap.port,
        imap.use_ssl,
        imap.starttls,
        imap.username,
        imap.password_env,
        imap.mailbox,
    ) == expected


# --- polling a real IMAP server ----------------------------------------------------------------


def test_poll_reads_replies_and_bounces_and_moves_the_cursor(mail, imap_server):
    channel = mail(**imap_server.settings())
    imap_server.append(
        "From: ann@example.com\nTo: relay@example.org\nSubject: Re: S\n"
        "Message-ID: <r1@example.com>\nIn-Reply-To: <k1@relay>\n\nYes please.\n\n"
        "> Hello\n"
    )
    imap_server.append(
        "From: MAILER-DAEMON@example.com\nTo: relay@example.org\nSubject: failure notice\n"
        "Message-ID: <b1@example.com>\n\n550 5.1.1 no such user\n\n"
        "Message-ID: <k2@relay>\n"
    )
    first = channel.poll(None)
    assert [(m.sender, m.text, m.references) for m in first.messages] == [
        ("ann@example.com", "Yes please.", ("<k1@relay>",))
    ]
    assert [(r.provider_message_id, r.permanent) for r in first.receipts] == [("<k2@relay>", True)]

    again = channel.poll(first.cursor)
    assert list(again.messages) == [] and list(again.receipts) == []


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
