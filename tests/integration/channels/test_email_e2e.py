"""Two-way email end to end: relay's engine, a real SMTP server (aiosmtpd) and a real
IMAP server (pymap), all on loopback. Each pulse is what ``relay tick`` and the
daemon run; the clock is a FakeClock, so follow-ups come without waiting."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default as default_policy
from typing import Any

import pytest
from sqlalchemy import select

from relay.runner.pulse import Pulse, PulseReport
from relay.store.models import Contact, Instance, Message
from relay.testing import FakeClock, wait_until

ALICE = "alice@example.com"
BOB = "bob@example.com"
TODOS = ["Which day suits you?", "Morning or afternoon?"]


@pytest.fixture
def clock() -> FakeClock:
    """Today: the IMAP server stamps mail with the real arrival time."""
    return FakeClock(datetime.now(UTC).replace(microsecond=0))


@pytest.fixture
def mail_relay(make_relay, db_url, clock, smtp_server, imap_server):
    settings = {"type": "email", "host": smtp_server.host, "port": smtp_server.port}
    settings |= {"from": "sales@example.org", "from_name": "Ana from the Depot"}
    settings |= imap_server.settings()
    overrides = {f"channels.email.{key}": value for key, value in settings.items()}
    return make_relay(db_url, clock, **overrides, **{"defaults.channel": "email"})


def pulse(relay: Any) -> PulseReport:
    return Pulse(relay, owner="test").run(poll=True)


def mails(smtp_server) -> list[EmailMessage]:
    return [message_from_bytes(m.content, policy=default_policy) for m in smtp_server.messages]


def instance(relay: Any, instance_id: str) -> Instance:
    with relay.store.transaction() as session:
        found = session.scalar(select(Instance).where(Instance.id == instance_id))
        assert found is not None
        return found


def inbound(relay: Any) -> list[Message]:
    with relay.store.transaction() as session:
        query = select(Message).where(Message.direction == "inbound").order_by(Message.id)
        return list(session.scalars(query).all())


def reply(
    sender: str,
    message_id: str,
    in_reply_to: str,
    references: str,
    body: str,
    **headers: str,
) -> str:
    lines = [
        f"From: {sender}",
        "To: Ana from the Depot <sales@example.org>",
        f"Subject: {headers.pop('Subject', 'Re: Your order 1042')}",
        f"Message-ID: {message_id}",
        f"In-Reply-To: {in_reply_to}",
        f"References: {references}",
        "Date: Mon, 05 Jan 2026 12:30:00 +0000",
        *(f"{k.replace('_', '-')}: {v}" for k, v in headers.items()),
        "",
        body,
    ]
    return "\n".join(lines)


ALICE_REPLY = """Thursday works for me.

Alice
--\x20
Alice Example | ACME Corp

On Mon, 5 Jan 2026 at 12:00, Ana from the Depot <sales@example.org> wrote:
> Hello! I'm getting in touch about confirm the delivery of order 1042.
> Reply STOP if you do not want these emails.
"""


def test_a_conversation_over_email_stays_in_one_thread(mail_relay, smtp_server, imap_server, clock):
    relay = mail_relay
    view = relay.start(
        ALICE,
        "confirm the delivery of order 1042",
        TODOS,
        heartbeat="1h",
        subject="Your order 1042",
    )
    pulse(relay)
    (first,) = mails(smtp_server)
    assert first["Subject"] == "Your order 1042"
    assert first["From"] == "Ana from the Depot <sales@example.org>"
    assert first["In-Reply-To"] is None
    first_id = first["Message-ID"]

    # Alice answers from her mail client: quoted history, a signature, threading headers.
    imap_server.append(reply(ALICE, "<alice-1@mail.example.com>", first_id, first_id, ALICE_REPLY))
    report = pulse(relay)
    assert report.errors == []
    answer = mails(smtp_server)[-1]
    assert answer["Subject"] == "Re: Your order 1042"
    assert answer["In-Reply-To"] == "<alice-1@mail.example.com>"
    assert answer["References"].split() == [first_id, "<alice-1@mail.example.com>"]
    (stored,) = inbound(relay)
    assert stored.body == "Thursday works for me.\n\nAlice"  # the new part only
    assert "Reply STOP" in (stored.raw or "")  # the whole email, for audit
    assert instance(relay, view.id).state == "WAITING_FOR_REPLY"  # STOP in the quote: ignored

    # Silence: the follow-up stays in the thread.
    clock.advance(timedelta(hours=1, minutes=1))
    pulse(relay)
    followup = mails(smtp_server)[-1]
    assert followup["Subject"] == "Re: Your order 1042"
    assert followup["In-Reply-To"] == answer["Message-ID"]
    assert followup["References"].split() == [
        first_id,
        "<alice-1@mail.example.com>",
        answer["Message-ID"],
    ]
    assert len({m["Message-ID"] for m in mails(smtp_server)}) == 3

    # Re-reading the mailbox from scratch stores nothing twice.
    pulse(relay)
    assert len(inbound(relay)) == 1


def test_an_out_of_office_is_kept_never_answered_and_pauses_until_the_return_date(
    mail_relay, smtp_server, imap_server, clock
):
    relay = mail_relay
    view = relay.start(ALICE, "confirm the delivery", TODOS, heartbeat="1h")
    pulse(relay)
    clock.advance(timedelta(hours=1, minutes=1))
    pulse(relay)  # one follow-up
    assert instance(relay, view.id).follow_up_count == 1
    first_id = mails(smtp_server)[-1]["Message-ID"]
    back = (clock.now() + timedelta(days=10)).date()

    imap_server.append(
        reply(
            ALICE,
            "<ooo-1@mail.example.com>",
            first_id,
            first_id,
            f"I am out of the office and back on {back.isoformat()}; no access to email.",
            Subject="Automatic reply: Your order",
            Auto_Submitted="auto-replied",
        )
    )
    pulse(relay)
    assert len(smtp_server.messages) == 2  # never answered
    row = instance(relay, view.id)
    assert row.state == "PAUSED"
    assert row.paused_until is not None and row.paused_until.date() == back
    assert row.follow_up_count == 1  # an auto-reply does not reset the follow-ups
    (stored,) = inbound(relay)
    assert stored.kind == "auto_reply"


def test_a_numeric_return_date_is_read_in_the_contacts_region(
    mail_relay, smtp_server, imap_server, clock
):
    """"back on 4/5" is April 5 from a contact in New York and 4 May from one in
    London: the daemon's poll reads the return date with the contact's region."""
    relay = mail_relay
    relay.set_contact(ALICE, timezone="America/New_York")
    relay.set_contact(BOB, timezone="Europe/London")
    today = clock.now().date()
    back = next(
        day for day in (today + timedelta(days=n) for n in range(3, 90))
        if day.day <= 12 and day.day != day.month
    )
    swapped = back.replace(month=back.day, day=back.month)
    if swapped <= today:
        swapped = swapped.replace(year=swapped.year + 1)
    views = {}
    for who in (ALICE, BOB):
        views[who] = relay.start(who, "confirm the delivery", TODOS, heartbeat="1h")
    pulse(relay)
    sent = {str(m["To"]): m["Message-ID"] for m in mails(smtp_server)}
    for n, who in enumerate((ALICE, BOB)):
        first_id = next(v for k, v in sent.items() if who in k)
        imap_server.append(
            reply(
                who,
                f"<ooo-region-{n}@mail.example.com>",
                first_id,
                first_id,
                f"I am out of the office, back on {back.month}/{back.day}.",
                Subject="Automatic reply: Your order",
                Auto_Submitted="auto-replied",
            )
        )
    pulse(relay)
    us, uk = instance(relay, views[ALICE].id), instance(relay, views[BOB].id)
    assert us.paused_until is not None and us.paused_until.date() == back
    assert uk.paused_until is not None and uk.paused_until.date() == swapped


def test_a_hard_bounce_fails_the_message_and_marks_the_address_undeliverable(
    mail_relay, smtp_server, imap_server
):
    relay = mail_relay
    view = relay.start(BOB, "confirm the delivery", TODOS, heartbeat="1h")
    pulse(relay)
    sent_id = mails(smtp_server)[0]["Message-ID"]

    imap_server.append(dsn(sent_id, BOB))
    report = pulse(relay)
    assert report.errors == []
    row = instance(relay, view.id)
    assert row.state == "NEEDS_HUMAN_INTERVENTION"
    with relay.store.transaction() as session:
        contact = session.scalar(select(Contact).where(Contact.address == BOB))
        assert contact is not None and contact.undeliverable_at is not None
        assert "5.1.1" in (contact.undeliverable_reason or "")
        message = session.scalar(select(Message).where(Message.provider_message_id == sent_id))
        assert message is not None and message.delivery_status == "bounced"
    with pytest.raises(Exception, match="undeliverable"):
        relay.start(BOB, "try again", TODOS)


def dsn(original_id: str, recipient: str) -> str:
    return f"""From: Mail Delivery System <MAILER-DAEMON@mx.example.com>
To: sales@example.org
Subject: Undelivered Mail Returned to Sender
Message-ID: <bounce-1@mx.example.com>
Auto-Submitted: auto-replied
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="B"

--B
Content-Type: text/plain

Your message could not be delivered.

--B
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.com

Final-Recipient: rfc822; {recipient}
Action: failed
Status: 5.1.1
Diagnostic-Code: smtp; 550 5.1.1 <{recipient}>: User unknown

--B
Content-Type: text/rfc822-headers

From: sales@example.org
To: {recipient}
Message-ID: {original_id}

--B--
"""


def test_an_imap_outage_loses_nothing_and_duplicates_nothing(
    mail_relay, smtp_server, imap_server, clock
):
    relay = mail_relay
    relay.start(ALICE, "confirm the delivery", TODOS, heartbeat="1h")
    pulse(relay)
    first_id = mails(smtp_server)[0]["Message-ID"]
    imap_server.append(reply(ALICE, "<alice-1@x>", first_id, first_id, "Thursday."))
    imap_server.stop()

    down = pulse(relay)
    assert any("IMAP" in error for error in down.errors)
    assert inbound(relay) == []

    imap_server.start()
    clock.advance(timedelta(minutes=11))  # past the channel's reconnect backoff
    pulse(relay)
    pulse(relay)
    assert [m.body for m in inbound(relay)] == ["Thursday."]


# -- the real CLI, in subprocesses -------------------------------------------------------------


def run_relay(cwd, *args: str) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAY_")}
    env |= {"NO_COLOR": "1", "RELAY_TEST_IMAP_PASSWORD": os.environ["RELAY_TEST_IMAP_PASSWORD"]}
    done = subprocess.run(
        [sys.executable, "-m", "relay", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.slow
def test_relay_start_and_relay_tick_over_email(tmp_path, smtp_server, imap_server):
    (tmp_path / "relay.toml").write_text(
        '[defaults]\nchannel = "email"\n\n[channels.email]\n'
        f'host = "127.0.0.1"\nport = {smtp_server.port}\nfrom = "sales@example.org"\n'
        f'imap_host = "127.0.0.1"\nimap_port = {imap_server.port}\nimap_ssl = false\n'
        'imap_username = "relay"\nimap_password_env = "RELAY_TEST_IMAP_PASSWORD"\n'
    )
    started = run_relay(
        tmp_path,
        "start",
        ALICE,
        "--objective",
        "confirm the delivery of order 1042",
        "--todo",
        TODOS[0],
        "--todo",
        TODOS[1],
        "--json",
    )
    instance_id = json.loads(started.stdout)["id"]
    (first,) = mails(smtp_server)
    assert first["Subject"] == "Confirm the delivery of order 1042"  # from the objective
    first_id = first["Message-ID"]

    imap_server.append(reply(ALICE, "<alice-1@x>", first_id, first_id, ALICE_REPLY))
    run_relay(tmp_path, "tick")
    answer = mails(smtp_server)[-1]
    assert answer["In-Reply-To"] == "<alice-1@x>"
    assert answer["Subject"] == "Re: Confirm the delivery of order 1042"

    shown = run_relay(tmp_path, "transcript", instance_id, "--raw")
    assert "Thursday works for me." in shown.stdout
    assert "Message-ID: <alice-1@x>" in shown.stdout  # the email as received


def test_a_crash_between_fetching_and_storing_reads_the_mail_again_and_stores_it_once(
    mail_relay, smtp_server, imap_server, monkeypatch
):
    relay = mail_relay
    relay.start(ALICE, "confirm the delivery", TODOS, heartbeat="1h")
    pulse(relay)
    first_id = mails(smtp_server)[0]["Message-ID"]
    imap_server.append(reply(ALICE, "<alice-1@x>", first_id, first_id, "Thursday."))

    def crash(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("killed after the poll returned, before the commit")

    from relay.engine.verbs import incoming

    with monkeypatch.context() as patch:
        patch.setattr(incoming, "ingest", crash)
        with pytest.raises(RuntimeError, match="killed"):
            pulse(relay)
    assert inbound(relay) == []

    pulse(relay)
    pulse(relay)
    assert [m.body for m in inbound(relay)] == ["Thursday."]
    assert len(smtp_server.messages) == 2  # the agent answered once


def test_start_refuses_a_phone_number_and_a_missing_password(make_relay, db_url, clock):
    from relay.core.errors import RelayError

    settings = {"type": "email", "host": "127.0.0.1", "from": "sales@example.org"}
    overrides = {f"channels.email.{key}": value for key, value in settings.items()}
    relay = make_relay(db_url, clock, **overrides)
    with pytest.raises(RelayError, match="cannot reach a phone number"):
        relay.start("+15551230001", "confirm", TODOS, channel="email")

    locked = make_relay(
        db_url,
        clock,
        **overrides,
        **{
            "channels.email.password_env": "RELAY_TEST_NO_SUCH_VAR",
            "channels.email.username": "sales",
        },
    )
    with pytest.raises(RelayError, match="RELAY_TEST_NO_SUCH_VAR"):
        locked.start(ALICE, "confirm", TODOS, channel="email")


@pytest.mark.slow
def test_the_daemon_polls_the_mailbox_through_an_imap_outage(tmp_path, smtp_server, imap_server):
    """A real ``relay daemon``: the reply that arrives while the IMAP server is down
    is read once it is back, stored once and answered once in the thread."""
    (tmp_path / "relay.toml").write_text(
        '[defaults]\nchannel = "email"\n\n[daemon]\npoll = "1s"\n\n[channels.email]\n'
        f'host = "127.0.0.1"\nport = {smtp_server.port}\nfrom = "sales@example.org"\n'
        f'imap_host = "127.0.0.1"\nimap_port = {imap_server.port}\nimap_ssl = false\n'
        'imap_username = "relay"\nimap_password_env = "RELAY_TEST_IMAP_PASSWORD"\n'
        'imap_retry = "1s"\n'
    )
    run_relay(tmp_path, "start", ALICE, "--objective", "confirm the delivery", "--todo", TODOS[0])
    first_id = mails(smtp_server)[0]["Message-ID"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAY_")}
    env |= {"NO_COLOR": "1", "RELAY_TEST_IMAP_PASSWORD": os.environ["RELAY_TEST_IMAP_PASSWORD"]}
    log_path = tmp_path / "daemon.log"
    with open(log_path, "wb") as log:
        daemon = subprocess.Popen(
            [sys.executable, "-m", "relay", "daemon"],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
    try:
        imap_server.stop()
        wait_until(lambda: "IMAP" in log_path.read_text(errors="replace"), timeout=60)
        imap_server.start()
        imap_server.append(reply(ALICE, "<alice-1@x>", first_id, first_id, ALICE_REPLY))
        wait_until(lambda: len(smtp_server.messages) >= 2, timeout=60)
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)
    answer = mails(smtp_server)[1]
    assert answer["In-Reply-To"] == "<alice-1@x>"
    assert len(smtp_server.messages) == 2, log_path.read_text(errors="replace")[-2000:]
    shown = run_relay(tmp_path, "transcript", "--json", instance_of(tmp_path))
    inbound_texts = [m["text"] for m in json.loads(shown.stdout) if m["direction"] == "inbound"]
    assert inbound_texts == ["Thursday works for me.\n\nAlice"]


def instance_of(cwd) -> str:
    listed = json.loads(run_relay(cwd, "list", "--json").stdout)
    (only,) = listed
    return str(only["id"])


def test_mail_to_the_unsubscribe_address_opts_the_contact_out(mail_relay, smtp_server, imap_server):
    relay = mail_relay
    view = relay.start(ALICE, "confirm the delivery", TODOS, heartbeat="1h")
    pulse(relay)
    header = mails(smtp_server)[0]["List-Unsubscribe"]
    assert header == "<mailto:sales+unsubscribe@example.org?subject=unsubscribe>"

    imap_server.append(
        f"From: {ALICE}\nTo: sales+unsubscribe@example.org\nSubject: unsubscribe\n"
        "Message-ID: <unsub-1@x>\n\nunsubscribe\n"
    )
    pulse(relay)
    with relay.store.transaction() as session:
        contact = session.scalar(select(Contact).where(Contact.address == ALICE))
        assert contact is not None and contact.opted_out_at is not None
    assert instance(relay, view.id).state in {"COMPLETED", "FAILED", "ABANDONED"}
    assert len(smtp_server.messages) == 1
