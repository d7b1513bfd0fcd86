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
ended without the condition (a reply or answer that can no longer come).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from relay.core.durations import parse_duration
from relay.core.errors import InvalidInput
from relay.engine.conversation.events import Kind
from relay.engine.verbs.program import last_cursor, parse_cursor
from relay.engine.views.events import EventView
from relay.engine.views.instances import InstanceView

if TYPE_CHECKING:
    from relay.engine.verbs.service import Relay

CONDITIONS = ("done", "reply", "answer", "needs-human")
EXIT_CODES = {"met": 0, "needs_human": 3, "timeout": 4, "ended": 5}
FIRST_POLL = 0.1
DEFAULT_POLL = 2.0
NEEDS_HUMAN = "NEEDS_HUMAN_INTERVENTION"


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
    relay: Relay,
    instance_ids: Sequence[str],
    *,
    until: str = "done",
    timeout: str | timedelta | None = None,
    since: int | str | None = None,
    poll: float = DEFAULT_POLL,
) -> WaitOutcome:
    if until not in CONDITIONS:
        raise InvalidInput(f"unknown condition {until!r} (one of: {', '.join(CONDITIONS)})")
    if not instance_ids:
        raise InvalidInput("give at least one instance id")
    limit = _seconds(timeout)
    cursor = last_cursor(relay) if since is None else parse_cursor(since)
    ids = [relay.get(i).id for i in instance_ids]  # resolves prefixes; unknown: exit 2
    started = time.monotonic()
    delay = FIRST_POLL
    fresh = True
    while True:
        news = relay.events(since=cursor, instance_ids=ids)
        if news:
            cursor = news[-1].id
        if news or fresh:
            views = tuple(relay.get(i) for i in ids)
            decided = _decide(until, views, news)
            if decided is not None:
                outcome, event = decided
                return WaitOutcome(outcome, until, views, cursor, time.monotonic() - started, event)
        fresh = False
        waited = time.monotonic() - started
        if limit is not None and waited >= limit:
            views = tuple(relay.get(i) for i in ids)
            return WaitOutcome("timeout", until, views, cursor, waited)
        pause = delay if limit is None else min(delay, max(0.0, limit - waited))
        time.sleep(pause)
        delay = min(poll, delay * 1.5) if not news else FIRST_POLL


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
    if any(v.state == NEEDS_HUMAN for v in views):
        return ("met" if until == "needs-human" else "needs_human"), None
    if ended:
        return "ended", None
    return None


def _ended(view: InstanceView) -> bool:
    return view.state in ("COMPLETED", "ABANDONED", "FAILED")


def _is_reply(event: EventView) -> bool:
    return event.kind == Kind.RECEIVED.value and event.data.get("kind", "message") == "message"


def _seconds(timeout: str | timedelta | None) -> float | None:
    if timeout is None or timeout == "":
        return None
    span = timeout if isinstance(timeout, timedelta) else parse_duration(str(timeout))
    return span.total_seconds()
