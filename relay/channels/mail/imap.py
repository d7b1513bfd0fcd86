"""Reading new mail from an IMAP mailbox, from a cursor the store keeps.

The cursor is JSON, one entry per mailbox::

    {"INBOX": {"uidvalidity": 1700000000, "uid": 456, "at": "2026-03-03T09:00:00+00:00"}}

``uid`` is the highest UID handed over; the next poll asks for UIDs above it.
The poller never remembers a position itself: the daemon stores the cursor it
returns in the same transaction as the messages, so a crash between fetching
and committing re-reads them (and de-duplication by ``Message-ID`` stores
them once). A server that is down raises :class:`ChannelError` and the cursor
stays where it was, however long the outage: nothing is skipped.

Where reading starts:

* **No cursor yet** (the first poll): the mail that arrived since
  ``imap_backfill`` ago (one day by default), so a reply that came in before
  the daemon first ran is not missed, and an old mailbox is not imported whole.
* **UIDVALIDITY changed** (the server rebuilt the mailbox, so old UIDs mean
  nothing): the mail that arrived since the day before the cursor last moved
  (``at``). Mail already stored is recognised by its Message-ID.

Mail is fetched with ``BODY.PEEK[]`` on a read-only ``EXAMINE``: relay never
marks mail as read or moves it, so the mailbox looks the same to a person.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from relay.channels.base import ChannelError


@dataclass(frozen=True)
class Fetched:
    uid: int
    raw: bytes
    arrived: datetime | None


@dataclass(frozen=True)
class Position:
    uidvalidity: int
    uid: int
    at: datetime

    @classmethod
    def load(cls, cursor: str | None, mailbox: str) -> Position | None:
        if not cursor:
            return None
        try:
            entry = json.loads(cursor)[mailbox]
            return cls(int(entry["uidvalidity"]), int(entry["uid"]), _aware(entry["at"]))
        except (ValueError, KeyError, TypeError):
            return None  # another mailbox's cursor, or an old format: read as a first poll

    def dump(self, cursor: str | None, mailbox: str) -> str:
        """The cursor with this mailbox's entry replaced (other mailboxes' entries kept)."""
        try:
            entries = json.loads(cursor) if cursor else {}
            entries = entries if isinstance(entries, dict) else {}
        except ValueError:
            entries = {}
        entries[mailbox] = {"uidvalidity": self.uidvalidity, "uid": self.uid, "at": _iso(self.at)}
        return json.dumps(entries, sort_keys=True)


def _aware(text: str) -> datetime:
    value = datetime.fromisoformat(text)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class ImapSettings:
    host: str
    port: int
    username: str | None
    password: Callable[[], str]  # read at poll time: read commands never need the secret
    mailbox: str = "INBOX"
    use_ssl: bool = True
    starttls: bool = False
    timeout: float = 30.0
    backfill: timedelta = timedelta(days=1)
    batch: int = 100  # at most this many mails per poll: memory stays bounded after an outage
    retry: float = 30.0  # seconds before reconnecting after a first failure (then doubled)


class Backoff:
    """Not reconnecting to a server that is down more often than a growing interval.

    The daemon polls every ``daemon.poll``; after a failure the poller waits
    ``imap_retry`` (30 s), then twice as long after each further failure, at
    most 10 minutes, before it connects again. It is only a pace: the cursor in
    the store is what guarantees nothing is lost.
    """

    def __init__(self, now: Callable[[], datetime], first: float = 30.0, cap: float = 600.0):
        self.now = now
        self.first = first
        self.cap = cap
        self.failures = 0
        self.not_before: datetime | None = None

    def check(self, where: str) -> None:
        if self.not_before is not None and self.now() < self.not_before:
            wait = (self.not_before - self.now()).total_seconds()
            raise ChannelError(
                f"{where}: failed {self.failures} time(s) in a row; next attempt in {wait:.0f}s"
            )

    def failed(self) -> None:
        self.failures += 1
        delay = min(self.cap, self.first * 2 ** (self.failures - 1))
        self.not_before = self.now() + timedelta(seconds=delay)

    def succeeded(self) -> None:
        self.failures = 0
        self.not_before = None


class ImapPoller:
    def __init__(
        self, settings: ImapSettings, now: Callable[[], datetime], where: str = "IMAP"
    ) -> None:
        self.settings = settings
        self.now = now
        self.where = where
        self.backoff = Backoff(now, first=settings.retry)

    def fetch(self, cursor: str | None) -> tuple[list[Fetched], str | None]:
        """The mail after ``cursor`` (at most ``batch``) and the cursor after it."""
        self.backoff.check(self.where)
        try:
            result = self._fetch(cursor)
        except ChannelError:
            self.backoff.failed()
            raise
        except Exception as exc:  # imapclient, socket, TLS: the server or the network failed
            self.backoff.failed()
            detail = " ".join(str(exc).split()) or type(exc).__name__
            raise ChannelError(f"{self.where}: {detail}") from exc
        self.backoff.succeeded()
        return result

    def holds(self, mailbox: str, message_id: str) -> bool:
        """Whether ``mailbox`` holds a mail with this ``Message-ID`` (the sent
        folder, asked after a crash whether a mail went)."""
        try:
            client = self._connect()
            try:
                client.select_folder(mailbox, readonly=True)
                return bool(client.search(["HEADER", "Message-ID", message_id]))
            finally:
                _logout(client)
        except Exception as exc:  # imapclient, socket, TLS: the server or the network failed
            detail = " ".join(str(exc).split()) or type(exc).__name__
            raise ChannelError(f"{self.where} ({mailbox}): {detail}") from exc

    def _fetch(self, cursor: str | None) -> tuple[list[Fetched], str | None]:
        mailbox = self.settings.mailbox
        client = self._connect()
        try:
            info = client.select_folder(mailbox, readonly=True)
            validity = int(info[b"UIDVALIDITY"])
            position = Position.load(cursor, mailbox)
            uids = self._new_uids(client, position, validity)
            chosen = uids[: self.settings.batch]
            fetched = _fetch_uids(client, chosen)
            if chosen:
                last = chosen[-1]
            elif position is not None and position.uidvalidity == validity:
                last = position.uid
            else:  # a first poll or a rescan that found nothing: start at the end
                last = _highest_uid(client, info)
        finally:
            _logout(client)
        moved = Position(validity, last, self.now())
        return fetched, moved.dump(cursor, mailbox)

    def _new_uids(self, client: Any, position: Position | None, validity: int) -> list[int]:
        if position is not None and position.uidvalidity == validity:
            found = client.search(["UID", f"{position.uid + 1}:*"])
            return sorted(u for u in found if u > position.uid)
        if position is None:
            since = self.now() - self.settings.backfill
        else:
            since = position.at - timedelta(days=1)
        return sorted(client.search(["SINCE", since.date()]))

    def _connect(self) -> Any:
        import ssl

        from imapclient import IMAPClient

        s = self.settings
        context = ssl.create_default_context() if (s.use_ssl or s.starttls) else None
        client = IMAPClient(s.host, s.port, ssl=s.use_ssl, ssl_context=context, timeout=s.timeout)
        try:
            if s.starttls:
                client.starttls(context)
            client.login(s.username or "", s.password())
        except BaseException:
            _logout(client)
            raise
        return client


def _highest_uid(client: Any, info: dict[bytes, Any]) -> int:
    if info.get(b"UIDNEXT"):
        return int(info[b"UIDNEXT"]) - 1
    return max(client.search(["ALL"]), default=0)


def _fetch_uids(client: Any, uids: list[int]) -> list[Fetched]:
    if not uids:
        return []
    data = client.fetch(uids, ["BODY.PEEK[]", "INTERNALDATE"])
    fetched = []
    for uid in uids:
        item = data.get(uid)
        if not item:
            continue  # expunged between SEARCH and FETCH
        raw = item.get(b"BODY[]") or b""
        arrived = item.get(b"INTERNALDATE")
        if isinstance(arrived, datetime) and arrived.tzinfo is None:
            arrived = arrived.astimezone(UTC)  # imapclient normalises to local time
        fetched.append(Fetched(uid, bytes(raw), arrived))
    return fetched


def _logout(client: Any) -> None:
    try:
        client.logout()
    except Exception:  # the connection is gone anyway
        try:
            client.shutdown()
        except Exception:
            return
