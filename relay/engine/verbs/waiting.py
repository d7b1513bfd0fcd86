"""``relay wait``: block until a condition holds for some conversations, reading only
the store (so it works against PostgreSQL with the daemon on another machine).

It polls the event log by cursor (one indexed query), with a backoff from
:data:`FIRST_POLL` to ``poll`` seconds, and reads the instances' states only when
an event for them has arrived. Conditions:

- ``done``: every instance has ended (COMPLETED, ABANDONED or FAILED);
- ``reply``: the contact wrote on one of them (after ``since``; default: after
  the wait started);
- ``answer``: every required todo of every instance has its answer;
- ``needs-human``: one of them waits for a person.

Exit codes (:data:`EXIT_CODES`): 0 the condition holds, 3 an instance needs a
human (when that is not what was asked for), 4 timed out, 5 the conversations
ended without the condition (a reply or answer that can no longer come), 6 work
is due and no daemon is alive to do it (only with ``require_daemon``).

Before it waits, and every :data:`RECHECK` seconds while it waits, it asks the
store whether work is due with no daemon alive (:func:`lookups.unattended_now`):
such a wait would end in a timeout for nothing, so it says so at once (the
outcome's ``warnings``, and ``on_warning`` as soon as it is known).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from relay.core.durations import parse_duration
from relay.core.errors import InvalidInput
from relay.core.states import ENDED, NEEDS_PERSON, values
from relay.core.values import EventKind
from relay.engine.verbs.conversations import get
from relay.engine.verbs.lookups import unattended_warnings
from relay.engine.verbs.program import last_cursor, parse_cursor, read_events
from relay.engine.views.events import EventView
from relay.engine.views.instances import InstanceView

if TYPE_CHECKING:
    from relay.engine.runtime import Runtime

CONDITIONS = ("done", "reply", "answer", "needs-human")
EXIT_CODES = {"met": 0, "needs_human": 3, "timeout": 4, "ended": 5, "no_daemon": 6}
FIRST_POLL = 0.1
DEFAULT_POLL = 2.0
#: Seconds between two looks at whether anyone does the due work.
RECHECK = 10.0
NEEDS_HUMAN = values(NEEDS_PERSON)
_ENDED = values(ENDED)


@dataclass(frozen=True)
class WaitOutcome:
    #: ``met``, ``needs_human``, ``timeout`` or ``ended``.
    outcome: str
    condition: str
    instances: tuple[InstanceView, ...]
    #: The last event seen: pass it as ``--since`` to carry on from here.
    cursor: int
    waited_seconds: float
    #: The event that met the condition (the reply), when one did.
    event: EventView | None = None
    #: Why the wait may be in vain (work due, no daemon alive), each said once.
    warnings: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.outcome]

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "condition": self.condition,
            "exit_code": self.exit_code,
            "cursor": str(self.cursor),
            "waited_seconds": round(self.waited_seconds, 3),
            "event": self.event.to_json() if self.event else None,
            "warnings": list(self.warnings),
            "instances": [
                {
                    "id": v.id,
                    "state": v.state,
                    "missing_answers": list(v.missing_answers),
                    "meta": v.meta,
                }
                for v in self.instances
            ],
        }


def wait(
    relay: Runtime,
    instance_ids: Sequence[str],
    *,
    until: str = "done",
    timeout: str | timedelta | None = None,
    since: int | str | None = None,
    poll: float = DEFAULT_POLL,
    require_daemon: bool = False,
    on_warning: Callable[[str], None] | None = None,
    on_poll: Callable[[float], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> WaitOutcome:
    """Wait as the module says; ``on_poll`` hears the seconds waited after each look."""
    _check(until, instance_ids)
    limit = _seconds(timeout)
    cursor = last_cursor(relay) if since is None else parse_cursor(since)
    ids = [get(relay, i).id for i in instance_ids]  # resolves prefixes; unknown: exit 2
    started = time.monotonic()
    delay = FIRST_POLL
    fresh = True
    watch = _Watch(relay, on_warning)

    def outcome(
        name: str, views: tuple[InstanceView, ...], event: EventView | None = None
    ) -> WaitOutcome:
        waited = time.monotonic() - started
        return WaitOutcome(name, until, views, cursor, waited, event, tuple(watch.said))

    while True:
        news = read_events(relay, since=cursor, instance_ids=ids)
        if news:
            cursor = news[-1].id
        if news or fresh:
            views = tuple(get(relay, i) for i in ids)
            decided = _decide(until, views, news)
            if decided is not None:
                return outcome(decided[0], views, decided[1])
        fresh = False
        waited = time.monotonic() - started
        if watch.unattended(waited) and require_daemon:
            return outcome("no_daemon", tuple(get(relay, i) for i in ids))
        if limit is not None and waited >= limit:
            return outcome("timeout", tuple(get(relay, i) for i in ids))
        (on_poll or _nothing)(waited)
        pause = delay if limit is None else min(delay, max(0.0, limit - waited))
        sleep(pause)
        delay = min(poll, delay * 1.5) if not news else FIRST_POLL


def _check(until: str, instance_ids: Sequence[str]) -> None:
    if until not in CONDITIONS:
        raise InvalidInput(f"unknown condition {until!r} (one of: {', '.join(CONDITIONS)})")
    if not instance_ids:
        raise InvalidInput("give at least one instance id")


def _nothing(_: float) -> None:
    pass


class _Watch:
    """Looks, now and then, whether anyone does the due work; says each warning once."""

    def __init__(self, relay: Runtime, on_warning: Callable[[str], None] | None) -> None:
        self.relay = relay
        self.on_warning = on_warning
        self.said: list[str] = []
        self.checked_at: float | None = None
        self.last = False

    def unattended(self, waited: float) -> bool:
        """Whether work was due with no daemon at the last look (looking again
        when :data:`RECHECK` seconds have passed)."""
        if self.checked_at is not None and waited - self.checked_at < RECHECK:
            return self.last
        self.checked_at = waited
        found = unattended_warnings(self.relay)
        for warning in found:
            if warning not in self.said:
                self.said.append(warning)
                if self.on_warning is not None:
                    self.on_warning(warning)
        self.last = bool(found)
        return self.last


def _decide(
    until: str, views: tuple[InstanceView, ...], news: list[EventView]
) -> tuple[str, EventView | None] | None:
    ended = all(_ended(v) for v in views)
    if until == "reply":
        reply = next((e for e in news if _is_reply(e)), None)
        if reply is not None:
            return "met", reply
    else:
        answered = all(not v.missing_answers for v in views)
        if (until == "done" and ended) or (until == "answer" and answered):
            return "met", None
    if any(v.state in NEEDS_HUMAN for v in views):
        return ("met" if until == "needs-human" else "needs_human"), None
    if ended:
        return "ended", None
    return None


def _ended(view: InstanceView) -> bool:
    return view.state in _ENDED


def _is_reply(event: EventView) -> bool:
    return event.kind == EventKind.RECEIVED.value and event.data.get("kind", "message") == "message"


def _seconds(timeout: str | timedelta | None) -> float | None:
    if timeout is None or timeout == "":
        return None
    span = timeout if isinstance(timeout, timedelta) else parse_duration(str(timeout))
    return span.total_seconds()


def bounded(
    relay: Runtime,
    instance_ids: Sequence[str],
    *,
    until: str = "done",
    timeout: str | timedelta | None = None,
    since: int | str | None = None,
    require_daemon: bool = False,
    max_wait: float | None = None,
) -> dict[str, Any]:
    """A wait that blocks for at most ``max_wait`` seconds (a server's limit, so no
    request is held for ten minutes): when the limit, not the caller's timeout, ends
    it, the answer's ``next`` holds the arguments that carry on where it stopped
    (``since`` the last event seen, ``timeout`` what is left of the caller's)."""
    limit = _seconds(timeout)
    cut = max_wait is not None and (limit is None or limit > max_wait)
    chunk = max_wait if cut else limit
    outcome = wait(
        relay,
        instance_ids,
        until=until,
        timeout=None if chunk is None else timedelta(seconds=chunk),
        since=since,
        require_daemon=require_daemon,
    )
    data = outcome.to_json()
    left = None if limit is None else limit - outcome.waited_seconds
    if outcome.outcome == "timeout" and cut and (left is None or left > 0):
        data["next"] = {
            "instance_ids": [v.id for v in outcome.instances],
            "until": until,
            "since": str(outcome.cursor),
            "timeout": None if left is None else f"{max(1, int(left))}s",
            "require_daemon": require_daemon,
        }
    return data
