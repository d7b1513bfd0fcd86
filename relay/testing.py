"""Test doubles that ship with relay, for relay's tests and for users' own.

``FakeClock`` is a settable clock: tests move time instead of sleeping.
``ScriptAgent`` answers each turn from a queue and records what it was shown.
``RecordingChannel`` records every delivery attempt and fails as told.
``Harness`` is a :class:`Relay` on a fake clock with the reads a test needs.
``wait_until`` is for the few tests and benchmarks that watch a real process
(a daemon in a subprocess), where only polling with a deadline can tell.

With pytest, the ``relay`` plugin (:mod:`relay.pytest_plugin`, registered as a
``pytest11`` entry point) gives them as fixtures; see docs/api.md.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from relay.agents.base import AgentError, TransientAgentError
from relay.channels.base import ChannelError, Incoming, Outbound
from relay.core.clock import ensure_utc
from relay.core.turns import Action, TurnContext

if TYPE_CHECKING:
    from relay.api import Relay
    from relay.runner.pulse import PulseReport
    from relay.store.database import Store
    from relay.store.models import Instance, Message

#: The contacts the harness starts conversations with unless told otherwise.
PHONE = "+15551230001"
OTHER = "+15551230002"

#: What a :class:`ScriptAgent` does on one turn: these actions, raise this, or
#: call this with the turn's context.
Turn = list[Action] | BaseException | Callable[[TurnContext], list[Action]]


class FakeClock:
    """A clock that only moves when told to. Thread-safe."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
        if self._now.tzinfo is None:
            raise ValueError("FakeClock needs a timezone-aware start")
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, delta: timedelta | float) -> datetime:
        step = delta if isinstance(delta, timedelta) else timedelta(seconds=delta)
        with self._lock:
            self._now += step
            return self._now

    def sleep(self, seconds: float) -> None:
        """What code that waits (send pacing) calls on this clock: it moves the
        clock on instead of waiting."""
        self.advance(max(seconds, 0.0))

    def set(self, moment: datetime) -> None:
        if moment.tzinfo is None:
            raise ValueError("FakeClock.set needs a timezone-aware datetime")
        with self._lock:
            self._now = ensure_utc(moment)


T = TypeVar("T")


def wait_until(check: Callable[[], T], timeout: float = 30.0, every: float = 0.05) -> T:
    """Poll ``check`` until it returns something truthy; raise after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"still not true after {timeout}s: {check}")
        time.sleep(every)


# -- agents, channels and the harness --------------------------------------------


@dataclass
class ScriptAgent:
    """An in-process agent that answers each turn from a queue and records contexts.

    A queued item is a list of actions, an exception to raise, or a function
    of the context. With nothing queued it waits for a reply (no actions).
    ``gate``/``entered`` let a test hold the agent mid-turn from another thread.
    """

    turns: list[Turn] = field(default_factory=list)
    contexts: list[TurnContext] = field(default_factory=list)
    gate: threading.Event | None = None
    entered: threading.Event = field(default_factory=threading.Event)
    name: str = "script"
    #: Whether its follow-ups run in the transaction that fires them (as the
    #: scripted agent's do: relay.engine.conversation.heartbeat.AtOnce).
    at_once: bool = False

    def then(self, *items: Turn) -> ScriptAgent:
        self.turns.extend(items)
        return self

    def run(self, context: TurnContext) -> list[Action]:
        self.contexts.append(context)
        self.entered.set()
        if self.gate is not None and not self.gate.wait(timeout=20):
            raise AssertionError("the test never opened the agent's gate")
        if not self.turns:
            return []
        item = self.turns.pop(0)
        if isinstance(item, BaseException):
            raise item
        if callable(item):
            return item(context)
        return list(item)


def transient(message: str = "server error (HTTP 503)") -> AgentError:
    return TransientAgentError(message)


@dataclass
class RecordingChannel:
    """A channel that records every attempt, fails as told, and dedupes delivered
    messages by idempotency key (as a real provider would)."""

    failures: list[ChannelError] = field(default_factory=list)
    fail_always: ChannelError | None = None
    attempts: list[Outbound] = field(default_factory=list)
    delivered: dict[str, Outbound] = field(default_factory=dict)
    before_send: Callable[[Outbound], None] | None = None
    name: str = "test"
    #: It dedupes by key, so a second hand-over after a crash is safe (set False to
    #: have such a message's fate ``unknown``, as for an SMS provider).
    resend_safe: bool = True

    def send(self, message: Outbound) -> str:
        self.attempts.append(message)
        if self.before_send is not None:
            self.before_send(message)
        if self.fail_always is not None:
            raise self.fail_always
        if self.failures:
            raise self.failures.pop(0)
        self.delivered.setdefault(message.idempotency_key, message)
        return f"test-{message.idempotency_key[:8]}"

    def poll(self, cursor: str | None) -> Incoming:
        return Incoming()


@dataclass
class Harness:
    """A Relay on a fake clock, with the reads a test of a whole conversation needs;
    every read goes to the store. ``tick()`` does what ``relay tick`` does once."""

    relay: Relay
    clock: FakeClock
    data_dir: Path

    def start(self, contact: str = PHONE, todos: list[str] | None = None, **kw: Any) -> str:
        objective = kw.pop("objective", "the delivery of order 1042")
        todos = (
            ["Which day suits you?", "What number can the driver call?"] if todos is None else todos
        )
        return self.relay.start(contact, objective, todos, **kw).id

    def tick(self, owner: str = "test") -> PulseReport:
        from relay.runner.pulse import Pulse

        return Pulse(self.relay, owner).run()

    def state(self, instance_id: str) -> str:
        return self.relay.get(instance_id).state

    def view(self, instance_id: str) -> Any:
        return self.relay.get(instance_id)

    def transcript(self, instance_id: str) -> list[tuple[str, str, str]]:
        return [(m.author, m.status, m.text) for m in self.relay.transcript(instance_id)]

    def outbound(self, instance_id: str) -> list[Any]:
        return [m for m in self.relay.transcript(instance_id) if m.direction == "outbound"]

    def history(self, instance_id: str) -> list[tuple[str | None, str | None, str]]:
        return [(h.from_state, h.to_state, h.event) for h in self.relay.history(instance_id)]

    def states(self, instance_id: str) -> list[str | None]:
        return [h.to_state for h in self.relay.history(instance_id)]

    def todos(self, instance_id: str) -> list[str]:
        return [t.status for t in self.relay.get(instance_id).todos]

    def console_lines(self) -> list[dict[str, Any]]:
        path = self.data_dir / "console.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def row(self, instance_id: str) -> Instance:
        from sqlalchemy import select

        from relay.store.models import Instance

        with self.relay.store.transaction() as session:
            found = session.scalar(select(Instance).where(Instance.id == instance_id))
            assert found is not None
            return found

    def message(self, message_id: int) -> Message:
        from relay.store.models import Message

        with self.relay.store.transaction() as session:
            found = session.get(Message, message_id)
            assert found is not None
            return found


@contextmanager
def traced_statements(store: Store, seen: Callable[[str, int], None]) -> Iterator[list[Any]]:
    """Call ``seen(sql, rows)`` for each statement sent while open. SQLite: every
    statement the driver runs (its trace callback, which also sees what
    ``relay.store.hotpath`` runs past SQLAlchemy; an executemany once a row), on
    connections opened from here on (the pool is emptied first); yields those
    connections, whose ``total_changes`` count the rows written. PostgreSQL: what
    SQLAlchemy sends, an executemany once with its number of rows."""
    from sqlalchemy import event

    engine = store.engine
    opened: list[Any] = []
    if store.dialect == "sqlite":
        engine.dispose()

        def traced(dbapi: Any, _record: Any) -> None:
            dbapi.set_trace_callback(lambda sql: seen(sql, 1))
            opened.append((dbapi, dbapi.total_changes))

        event.listen(engine, "connect", traced)
        try:
            yield opened
        finally:
            event.remove(engine, "connect", traced)
            engine.dispose()
        return

    def sent(_c: Any, _cur: Any, sql: str, params: Any, _ctx: Any, many: bool) -> None:
        seen(sql, len(params) if many and isinstance(params, list | tuple) else 1)

    event.listen(engine, "before_cursor_execute", sent)
    try:
        yield opened
    finally:
        event.remove(engine, "before_cursor_execute", sent)

