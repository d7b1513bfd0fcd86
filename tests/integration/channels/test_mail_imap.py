"""The IMAP poller against a real IMAP server (pymap) on loopback: cursor, rescans, outages."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta

import pytest

from relay.channels.base import ChannelError
from relay.channels.mail.imap import ImapPoller, ImapSettings, Position
from relay.testing import FakeClock


def mail(n: int, sender: str = "ann@example.com") -> str:
    return (
        f"From: {sender}\nTo: sales@example.org\nSubject: note {n}\n"
        f"Message-ID: <note-{n}@example.com>\n\nBody {n}\n"
    )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime.now(UTC))


@pytest.fixture
def poller(imap_server, clock):
    def make(**overrides) -> ImapPoller:
        settings = ImapSettings(
            host=imap_server.host,
            port=imap_server.port,
            username="relay",
            password=lambda: os.environ["RELAY_TEST_IMAP_PASSWORD"],
            use_ssl=False,
            timeout=10,
            **overrides,
        )
        return ImapPoller(settings, clock.now)

    return make


def ids(fetched) -> list[str]:
    from email import message_from_bytes

    return [message_from_bytes(f.raw)["Message-ID"] for f in fetched]


def test_reads_new_mail_after_the_cursor_and_never_twice(imap_server, poller):
    imap_server.append(mail(1))
    first, cursor = poller().fetch(None)
    assert ids(first) == ["<note-1@example.com>"]  # the first poll reads the last day

    again, same = poller().fetch(cursor)
    assert again == [] and json.loads(same)["INBOX"]["uid"] == json.loads(cursor)["INBOX"]["uid"]

    imap_server.append(mail(2))
    imap_server.append(mail(3))
    new, after = poller().fetch(cursor)
    assert ids(new) == ["<note-2@example.com>", "<note-3@example.com>"]
    assert json.loads(after)["INBOX"]["uid"] == new[-1].uid


def test_a_cursor_that_is_not_stored_means_the_mail_is_read_again(imap_server, poller):
    """The daemon stores the cursor with the messages; if that commit failed, the old
    cursor is still the stored one and the same mail comes back."""
    imap_server.append(mail(1))
    first, _lost = poller().fetch(None)
    second, _ = poller().fetch(None)
    assert ids(first) == ids(second) == ["<note-1@example.com>"]


def test_a_batch_limit_leaves_the_rest_for_the_next_poll(imap_server, poller):
    for n in range(5):
        imap_server.append(mail(n))
    small = poller(batch=2)
    cursor, seen = None, []
    for _ in range(4):
        fetched, cursor = small.fetch(cursor)
        seen += ids(fetched)
    assert seen == [f"<note-{n}@example.com>" for n in range(5)]


def test_a_changed_uidvalidity_rescans_from_the_day_before_the_cursor_moved(
    imap_server, poller, clock
):
    imap_server.append(mail(1))
    _, cursor = poller().fetch(None)
    entry = json.loads(cursor)["INBOX"]
    # The server rebuilt the mailbox: the stored UIDVALIDITY no longer matches.
    stale = Position(entry["uidvalidity"] + 1, 999, clock.now()).dump(cursor, "INBOX")
    imap_server.append(mail(2))

    rescanned, moved = poller().fetch(stale)
    assert ids(rescanned) == ["<note-1@example.com>", "<note-2@example.com>"]
    assert json.loads(moved)["INBOX"]["uidvalidity"] == entry["uidvalidity"]


def test_a_zero_backfill_reads_from_today(imap_server, poller):
    imap_server.append(mail(1))
    none, cursor = poller(backfill=timedelta(0)).fetch(None)
    # SINCE today still finds today's mail: backfill 0 means "from today".
    assert ids(none) == ["<note-1@example.com>"]
    imap_server.append(mail(2))
    assert ids(poller().fetch(cursor)[0]) == ["<note-2@example.com>"]


def test_other_mailboxes_keep_their_entries(imap_server, poller):
    imap_server.append(mail(1))
    other = json.dumps({"Sales": {"uidvalidity": 1, "uid": 7, "at": "2026-01-01T00:00:00+00:00"}})
    _, cursor = poller().fetch(other)
    assert set(json.loads(cursor)) == {"Sales", "INBOX"}


def test_a_server_that_is_down_raises_and_backs_off_then_nothing_is_skipped(
    imap_server, poller, clock
):
    imap_server.append(mail(1))
    channel = poller()
    _, cursor = channel.fetch(None)
    imap_server.stop()

    with pytest.raises(ChannelError, match="IMAP"):
        channel.fetch(cursor)
    with pytest.raises(ChannelError, match="next attempt in 30s"):
        channel.fetch(cursor)  # no reconnect inside the backoff interval
    clock.advance(31)
    with pytest.raises(ChannelError, match="IMAP"):
        channel.fetch(cursor)
    with pytest.raises(ChannelError, match="next attempt in 60s"):
        channel.fetch(cursor)

    imap_server.start()
    imap_server.append(mail(2))
    clock.advance(61)
    fetched, _ = channel.fetch(cursor)  # the cursor never moved while the server was down
    assert ids(fetched) == ["<note-2@example.com>"]
    assert channel.backoff.failures == 0


def test_a_wrong_password_is_a_channel_error(imap_server, poller, monkeypatch):
    monkeypatch.setenv("RELAY_TEST_IMAP_PASSWORD", "wrong")
    with pytest.raises(ChannelError):
        poller().fetch(None)
