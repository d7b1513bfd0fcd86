"""``[[notify]]``: tell someone when a conversation needs them, ends, gets a reply or fails.

Each target follows the event log (``relay events``) from a position kept in the
store, like a channel's poll position: an event is handed over, then the
position moves past it. A target that is down is retried on the next poll
from the same event, in order, however long it was down; nothing is skipped.
Delivery is at-least-once, so every notification carries the event's id
(``X-Relay-Event-Id`` and ``"id"``) for the receiver to drop repeats.

This follows the event log rather than writing outbox rows: the log already
is a durable, ordered queue written in the transaction of what it records,
and a notification is not part of any conversation's transcript.

::

    [[notify]]
    url = "https://ops.example.com/relay-hook"   # or: command = ["python3", "page.py"]
    events = ["needs_human", "done"]              # needs_human, done, reply, failed, draft
    secret_env = "RELAY_NOTIFY_SECRET"            # HMAC-SHA256 of "<timestamp>.<body>"
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from relay.core.errors import ConfigError
from relay.core.jsonshape import versioned
from relay.core.states import ENDED, FAILED_STATES, NEEDS_PERSON, values
from relay.engine.runtime import move_position, read_position
from relay.engine.verbs.program import read_events

if TYPE_CHECKING:
    from relay.engine.runtime import Runtime
    from relay.engine.views.events import EventView

log = logging.getLogger("relay.notify")

#: The names a ``[[notify]]`` table may choose, and what each means in the log.
TOPICS = ("needs_human", "done", "reply", "failed", "draft")
_ENDED = values(ENDED)
_NEEDS_PERSON = values(NEEDS_PERSON)
_FAILED = values(FAILED_STATES)
BATCH = 100
TIMEOUT = 10.0


@dataclass(frozen=True)
class Target:
    index: int
    url: str | None
    command: tuple[str, ...]
    topics: frozenset[str]
    secret_env: str | None

    @property
    def cursor_key(self) -> str:
        return f"notify:{self.index}"


def targets(config_value: Any) -> list[Target]:
    """The ``[[notify]]`` tables, checked (a bad one names its position)."""
    if config_value in (None, ""):
        return []
    if not isinstance(config_value, list):
        raise ConfigError("notify must be an array of tables: [[notify]]")
    return [_target(i, raw) for i, raw in enumerate(config_value, start=1)]


def _target(index: int, raw: Any) -> Target:
    where = f"[[notify]] #{index}"
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where} must be a table")
    unknown = set(raw) - {"url", "command", "events", "secret_env"}
    if unknown:
        known = "url, command, events, secret_env"
        raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]} ({known})")
    url, command = raw.get("url"), raw.get("command")
    if bool(url) == bool(command):
        raise ConfigError(f"{where}: set url or command (one of them)")
    if url and not str(url).startswith(("http://", "https://")):
        raise ConfigError(f"{where}: url must be http(s)://, not {url!r}")
    if command and not (isinstance(command, list) and all(isinstance(a, str) for a in command)):
        raise ConfigError(f"{where}: command must be a list of strings")
    topics = raw.get("events", list(TOPICS))
    if not isinstance(topics, list) or not set(topics) <= set(TOPICS) or not topics:
        raise ConfigError(f"{where}: events must be a list of {', '.join(TOPICS)}")
    secret = raw.get("secret_env")
    return Target(index, str(url) if url else None, tuple(command or ()), frozenset(topics), secret)


def topic_of(event: EventView) -> str | None:
    """Which notification topic an event is, if any."""
    if event.kind == "message.received":
        return "reply"
    if event.kind == "message.failed":
        return "failed"
    if event.kind == "draft":
        # A person is needed to approve it; what became of it is theirs to know.
        return "draft" if event.data.get("action") == "written" else None
    if event.kind != "state.changed":
        return None
    to = event.data.get("to")
    if to in _NEEDS_PERSON:
        return "needs_human"
    if to in _FAILED and event.data.get("event") != "cancel":
        return "failed"
    return "done" if to in _ENDED else None


def notify_due(relay: Runtime) -> int:
    """Hand each target what happened since its position; how many were handed over."""
    handed = 0
    for target in targets(list(relay.config.settings.notify)):
        handed += _follow(relay, target)
    return handed


def _follow(relay: Runtime, target: Target) -> int:
    start = read_position(relay, target.cursor_key)
    events = read_events(relay, since=start, limit=BATCH)
    handed, position = 0, start
    for event in events:
        topic = topic_of(event)
        if topic in target.topics:
            try:
                _deliver(target, topic, event)
            except (OSError, ConfigError, subprocess.SubprocessError) as exc:
                log.warning(
                    "notify #%s: event %s not delivered (%s); retried next poll",
                    target.index,
                    event.id,
                    exc,
                )
                break
            handed += 1
        position = str(event.id)
    if position is not None and position != start:
        move_position(relay, target.cursor_key, read=start, position=position)
    return handed


def payload(topic: str, event: EventView) -> bytes:
    body = {"id": event.id, "topic": topic, **event.to_json()}
    return json.dumps(versioned(body), separators=(",", ":")).encode("utf-8")


def _deliver(target: Target, topic: str, event: EventView) -> None:
    body = payload(topic, event)
    if target.command:
        subprocess.run(
            list(target.command), input=body, check=True, timeout=TIMEOUT, capture_output=True
        )
        return
    assert target.url is not None
    import httpx

    headers = {"Content-Type": "application/json", "X-Relay-Event-Id": str(event.id)}
    if target.secret_env:
        secret = os.environ.get(target.secret_env)
        if not secret:
            raise ConfigError(f"{target.secret_env} (notify secret_env) is not set")
        stamp = str(int(time.time()))
        digest = hmac.new(secret.encode(), stamp.encode() + b"." + body, hashlib.sha256)
        headers["X-Relay-Timestamp"] = stamp
        headers["X-Relay-Signature"] = f"sha256={digest.hexdigest()}"
    try:
        response = httpx.post(target.url, content=body, headers=headers, timeout=TIMEOUT)
    except httpx.HTTPError as exc:
        raise OSError(str(exc)) from exc
    if response.status_code >= 300:
        raise OSError(f"{target.url} answered {response.status_code}")
