"""The default channel: outbound messages land in a JSONL file, replies come from an inbox file.

It lets relay run end to end on one machine with no provider: the operator
reads what was "sent" in ``.relay/console.jsonl`` (and on stderr) and answers
with ``relay receive`` or by appending a line to ``.relay/console-inbox.jsonl``.

The outbox file doubles as the idempotency record. A retry carries the same
idempotency key, so ``send`` looks the key up under an exclusive ``flock``
before appending: two daemons, or a daemon restarted after a crash between
"written" and "recorded", never write the same message twice.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import secrets
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import IO, Any, TextIO

from relay.channels.base import (
    ChannelError,
    Inbound,
    Incoming,
    Outbound,
    Rejected,
    setting_flag,
)
from relay.core.clock import Clock, SystemClock, ensure_utc, isoformat
from relay.core.storable import raw_for_store

log = logging.getLogger(__name__)

DEFAULT_FILE = "console.jsonl"
DEFAULT_INBOX = "console-inbox.jsonl"


def _data_dir(settings: Mapping[str, Any]) -> Path:
    raw = settings.get("_data_dir")
    return Path(str(raw)) if raw else Path.cwd() / ".relay"


def _setting_path(settings: Mapping[str, Any], key: str, default_name: str) -> Path:
    """Resolve a path setting the way a person reads relay.toml: relative to the file's folder."""
    data_dir = _data_dir(settings)
    value = settings.get(key)
    if not value:
        return data_dir / default_name
    path = Path(str(value)).expanduser()
    return path if path.is_absolute() else data_dir.parent / path


@contextmanager
def _locked(path: Path, mode: str) -> Iterator[IO[Any]]:
    """Open ``path`` and hold an exclusive lock on it; closing the file releases the lock.

    Created owner-only (0600) whoever calls, the CLI or the Python API: it holds
    what contacts are told."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, mode, opener=_owner_only) as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        yield handle


def _owner_only(name: str, flags: int) -> int:
    return os.open(name, flags, 0o600)


def _complete_lines(data: bytes, start: int) -> tuple[list[tuple[int, bytes]], int]:
    """Split ``data`` into whole lines with their file offsets; a line still being written waits."""
    end = data.rfind(b"\n") + 1
    lines, pos = [], start
    for raw in data[:end].splitlines(keepends=True):
        lines.append((pos, raw.strip()))
        pos += len(raw)
    return lines, end


class ConsoleChannel:
    """Writes outbound messages to a JSONL file; reads inbound ones from an inbox file."""

    #: Outbound.thread is not read here (the outbox then does not look it up).
    threads = False
    #: Nor Outbound.unsubscribe_token (the outbox then reads no token key).
    unsubscribe_links = False
    #: A key already in the file is never written again (looked up under a lock),
    #: so a message sent again after a crash reaches nobody twice.
    resend_safe = True

    def __init__(
        self,
        name: str,
        path: Path,
        inbox: Path,
        *,
        echo: bool = True,
        stream: TextIO | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.name = name
        self.path = path
        self.inbox = inbox
        self.echo = echo
        self._stream = stream
        self._clock = clock or SystemClock()
        self._index: dict[str, str] = {}
        self._indexed_bytes = 0

    @classmethod
    def from_settings(cls, name: str, settings: Mapping[str, Any]) -> ConsoleChannel:
        return cls(
            name,
            _setting_path(settings, "file", DEFAULT_FILE),
            _setting_path(settings, "inbox", DEFAULT_INBOX),
            echo=setting_flag(name, settings, "echo", True),
        )

    @property
    def offset_path(self) -> Path:
        return self.inbox.with_name(self.inbox.name + ".offset")

    def send(self, message: Outbound) -> str:
        return self.send_many([message])[0]

    def send_many(self, messages: Sequence[Outbound]) -> list[str]:
        """Append several messages with one write and one fsync under one lock.

        An fsync per message cost more than everything else a delivery does;
        the dispatcher hands over a group it has just confirmed, and each key
        is still looked up first, so a retried group writes only what is new.
        """
        try:
            return self._send_many(messages)
        except OSError as exc:  # a full disk or a read-only folder may pass; retry
            raise ChannelError(f"channel {self.name}: cannot write {self.path}: {exc}") from exc

    def poll(self, cursor: str | None) -> Incoming:
        try:
            return self._poll(cursor)
        except OSError as exc:
            raise ChannelError(f"channel {self.name}: cannot read {self.inbox}: {exc}") from exc

    def _send_many(self, messages: Sequence[Outbound]) -> list[str]:
        if not messages:
            return []
        with _locked(self.path, "a+b") as handle:
            partial_tail = self._catch_up(handle)
            ids: list[str] = []
            written: dict[str, str] = {}
            lines: list[str] = []
            for message in messages:
                key = message.idempotency_key
                known = self._index.get(key) or written.get(key)
                if known is None:
                    known = written[key] = f"console-{secrets.token_hex(6)}"
                    lines.append(json.dumps(self._record(message, known), ensure_ascii=False))
                ids.append(known)
            if lines:
                # A crash mid-write can leave half a line; start ours on a fresh one.
                data = "\n".join(lines) + "\n"
                handle.write((b"\n" if partial_tail else b"") + data.encode("utf-8"))
                handle.flush()
                os.fsync(handle.fileno())
                self._indexed_bytes = handle.tell()
                # Remembered only once durable: a failed write recorded nothing.
                self._index.update(written)
        for message in messages:
            if written.pop(message.idempotency_key, None) is not None:
                self._echo(message)
        return ids

    def _poll(self, cursor: str | None) -> Incoming:
        """The whole lines after byte ``cursor``; the new cursor is the byte after them.

        Before the store kept the position, an ``.offset`` file beside the inbox
        did: it is read once, when the store has none yet, so an upgrade does not
        read the whole inbox again.
        """
        offset = _parse_offset(cursor) if cursor is not None else self._legacy_offset()
        if not self.inbox.exists():
            return Incoming()
        with open(self.inbox, "rb") as handle:
            if os.fstat(handle.fileno()).st_size < offset:
                log.warning("%s was truncated; reading it from the start", self.inbox)
                offset = 0
            handle.seek(offset)
            lines, consumed = _complete_lines(handle.read(), offset)
        found = [_inbound(raw, pos, self.inbox) for pos, raw in lines if raw]
        messages = [item for item in found if isinstance(item, Inbound)]
        rejected = [item for item in found if isinstance(item, Rejected)]
        return Incoming(messages=messages, cursor=str(offset + consumed), rejected=rejected)

    def _legacy_offset(self) -> int:
        try:
            return _parse_offset(self.offset_path.read_text())
        except OSError:
            return 0

    def _catch_up(self, handle: IO[bytes]) -> bool:
        """Index lines other processes appended since we last looked.

        Returns True when the file ends in a partial line (a writer crashed mid-line).
        """
        if os.fstat(handle.fileno()).st_size < self._indexed_bytes:
            self._index.clear()
            self._indexed_bytes = 0
        handle.seek(self._indexed_bytes)
        data = handle.read()
        lines, consumed = _complete_lines(data, self._indexed_bytes)
        for _, raw in lines:
            self._remember(raw)
        self._indexed_bytes += consumed
        return consumed < len(data)

    def _remember(self, raw: bytes) -> None:
        try:
            record = json.loads(raw)
            self._index[str(record["idempotency_key"])] = str(record["provider_message_id"])
        except (ValueError, KeyError, TypeError):
            return  # a torn or hand-edited line: it recorded no delivery

    def _record(self, message: Outbound, provider_id: str) -> dict[str, Any]:
        return {
            "message_id": message.message_id,
            "instance_id": message.instance_id,
            "to": message.to,
            "text": message.text,
            "idempotency_key": message.idempotency_key,
            "provider_message_id": provider_id,
            "sent_at": isoformat(self._clock.now()),
        }

    def _echo(self, message: Outbound) -> None:
        if not self.echo:
            return
        # stderr, looked up at call time, so `--json` output on stdout stays parseable.
        stream = self._stream or sys.stderr
        text = " ⏎ ".join(message.text.splitlines()) or message.text
        print(f"→ {message.to} [{message.instance_id or '-'}]: {text}", file=stream, flush=True)


def _parse_offset(text: str) -> int:
    try:
        return max(int(text.strip() or 0), 0)
    except ValueError:
        return 0


def _inbound(raw: bytes, offset: int, source: Path) -> Inbound | Rejected:
    """One inbox line as an Inbound; a malformed line is kept aside as rejected
    (``relay inbox --kind rejected``), not retried forever and not lost."""
    try:
        data = json.loads(raw)
        sender, text = str(data["from"]).strip(), str(data["text"])
        received_at = _parse_time(data.get("received_at"))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        log.warning("%s: malformed line at byte %d kept aside: %r", source, offset, exc)
        why = f"malformed line at byte {offset} of {source.name}: {type(exc).__name__}: {exc}"
        return Rejected(why, raw_for_store(raw))
    if not sender:
        log.warning("%s: line at byte %d kept aside: empty 'from'", source, offset)
        return Rejected(f"line at byte {offset} of {source.name}: empty 'from'", raw_for_store(raw))
    # A stable id per line lets the store recognise a line it has already seen.
    digest = hashlib.sha256(raw).hexdigest()[:8]
    provider_id = str(data.get("id") or f"console-in-{offset}-{digest}")
    return Inbound(sender, text, received_at, provider_id)


def _parse_time(value: Any) -> datetime | None:
    if value in (None, ""):
        return None
    return ensure_utc(datetime.fromisoformat(str(value)))
