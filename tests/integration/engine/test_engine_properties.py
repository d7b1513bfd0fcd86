"""Property test: random interleavings of replies, operator verbs, ticks, time, channel
failures and dead processes, on the real engine and store.

Whatever happens, after every tick no instance is left needing a turn (CREATED,
ACTIVE, WAITING_FOR_AGENT, HEARTBEAT_SCHEDULED) unless a dead worker's lease still
covers it; at every delivery
- the row being sent is claimed (``sending``): a sent message is never sent again;
- the contact has not opted out;
- its conversation is not paused, queued, cancelled, failed or abandoned;
and once the dust settles (time passes, channels recover), every outbound row is
final (or held for a paused conversation), every row marked sent reached the
channel exactly once, and relay doctor finds no broken invariant.

Each example talks to a contact of its own in one database per test.
"""

from __future__ import annotations

import contextlib
import itertools
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from engine_support import ProcessDied
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from relay.channels.base import ChannelError, Outbound
from relay.core.errors import OptedOut, Refused
from relay.engine.turns.runner import TurnRunner
from relay.engine.verbs.doctor import examine
from relay.store import claims
from relay.store.models import Contact, Instance, Message
from relay.testing import Harness

TURN_STATES = set(claims.TURN_STATES)
#: After a pause, a cancel or an abandon was acknowledged, nothing more goes out.
HELD_OR_ENDED = {"PAUSED", "QUEUED", "FAILED", "ABANDONED"}
REPLIES = ["Thursday", "555-0143", "I need a human", "Stop. Thank you", "START", "ok"]
NUMBERS = itertools.count(1)


@dataclass
class WatchingChannel:
    """Delivers (idempotently, by key) and checks the store at every send."""

    engine: Harness | None = None
    fail_next: int = 0
    die_next: bool = False
    delivered: dict[str, int] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    name: str = "watch"
    #: It delivers by key, so a second hand-over after a crash is safe (relay.channels.fate).
    resend_safe: bool = True

    def send(self, message: Outbound) -> str:
        assert self.engine is not None
        with self.engine.relay.store.transaction() as session:
            row = session.get(Message, message.message_id)
            contact = session.scalar(select(Contact).where(Contact.address == message.to))
            if row is None or row.status != "sending":
                self.violations.append(
                    f"message {message.message_id} sent while {row and row.status}"
                )
            if contact is None or contact.opted_out_at is not None:
                self.violations.append(
                    f"message {message.message_id} sent to opted-out {message.to}"
                )
            # Instances are keyed by seq; the public id is a unique column.
            instance = (
                session.scalar(select(Instance).where(Instance.id == message.instance_id))
                if message.instance_id
                else None
            )
            if instance is not None and instance.state in HELD_OR_ENDED:
                self.violations.append(
                    f"message {message.message_id} sent while its conversation "
                    f"was {instance.state} ({instance.failure_reason})"
                )
        if self.fail_next:
            self.fail_next -= 1
            raise ChannelError("provider hiccup")
        if message.idempotency_key not in self.delivered:
            self.delivered[message.idempotency_key] = message.message_id
        if self.die_next:
            self.die_next = False
            raise ProcessDied()
        return f"watch-{message.idempotency_key[:8]}"

    def poll(self, cursor: str | None) -> Any:
        from relay.channels.base import Incoming

        return Incoming()


OPS = st.one_of(
    st.just(("start",)),
    st.tuples(st.just("reply"), st.sampled_from(REPLIES)),
    st.tuples(st.sampled_from(["pause", "resume", "cancel", "send"]), st.integers(0, 2)),
    st.just(("tick",)),
    st.just(("tick",)),
    st.tuples(st.just("advance"), st.sampled_from([30, 120, 600, 1800])),
    st.tuples(st.just("fail"), st.integers(1, 6)),
    st.just(("die",)),
    st.just(("dead_turn",)),
)


def _apply(
    engine: Harness, channel: WatchingChannel, contact: str, ids: list[str], op: Any
) -> None:
    kind, arg = op[0], op[1] if len(op) > 1 else None
    relay = engine.relay
    target = ids[arg % len(ids)] if ids and isinstance(arg, int) else ""
    actions = {
        "start": lambda: ids.append(engine.start(contact, todos=["Which day?", "Which number?"])),
        "reply": lambda: relay.receive(contact, arg),
        "pause": lambda: relay.pause(target),
        "resume": lambda: relay.resume(target),
        "cancel": lambda: relay.cancel(target),
        "send": lambda: relay.send(target, "A note from a person"),
        "tick": lambda: _tick(engine, contact),
        "advance": lambda: engine.clock.advance(timedelta(seconds=arg)),
        "fail": lambda: setattr(channel, "fail_next", arg),
        "die": lambda: setattr(channel, "die_next", True),
        "dead_turn": lambda: TurnRunner(relay, "dead").claim(1),
    }
    with contextlib.suppress(Refused, OptedOut):
        actions[kind]()


def _tick(engine: Harness, contact: str) -> None:
    try:
        engine.tick()
    except ProcessDied:
        # The process died mid-delivery; what it committed stays. The daemon that
        # starts next takes back what the dead one had claimed (DaemonRunner.reclaim):
        # the turns it had claimed but not run yet, the send it left open.
        with engine.relay.store.transaction() as session:
            claims.release_claims_of(session, ["test"], engine.clock.now())
        return
    now = engine.clock.now()
    for instance in _instances(engine, contact):
        if instance.state in TURN_STATES:
            covered = instance.lease_owner == "dead" and instance.lease_expires_at > now
            assert covered, f"{instance.id} left {instance.state} after a tick"


def _instances(engine: Harness, contact: str) -> list[Instance]:
    with engine.relay.store.transaction() as session:
        return list(
            session.scalars(
                select(Instance)
                .join(Contact, Contact.id == Instance.contact_id)
                .where(Contact.address == contact)
            )
        )


def _settle(engine: Harness, channel: WatchingChannel, contact: str) -> None:
    channel.fail_next, channel.die_next = 0, False
    for _ in range(6):
        engine.clock.advance(timedelta(minutes=10))
        _tick(engine, contact)
    paused = {i.id for i in _instances(engine, contact) if i.state == "PAUSED"}
    with engine.relay.store.transaction() as session:
        rows = session.scalars(
            select(Message)
            .join(Contact, Contact.id == Message.contact_id)
            .where(Contact.address == contact, Message.direction == "outbound")
        ).all()
        for row in rows:
            final = row.status in ("sent", "failed", "blocked", "cancelled")
            held = row.status == "queued" and row.instance_id in paused
            assert final or held, (row.id, row.status)
            if row.status == "sent":
                assert channel.delivered.get(row.idempotency_key or "") == row.id


def test_random_interleavings_keep_the_engine_s_promises(
    make_engine: Any, register_channel: Any, db_url: str
) -> None:
    channel = WatchingChannel()
    register_channel("watch", lambda name, settings: channel)
    engine = make_engine(
        **{
            "channels.watch.type": "watch",
            "defaults.channel": "watch",
            "defaults.max_followups": 2,
            "outbox.backoff": "10s",
            "outbox.max_attempts": 3,
            "turns.lease": "2m",
        }
    )
    channel.engine = engine

    @settings(
        # PostgreSQL round trips cost more; SQLite explores further.
        max_examples=30 if db_url.startswith("sqlite") else 10,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(st.lists(OPS, min_size=1, max_size=18))
    def run(ops: list[Any]) -> None:
        contact = f"+1555888{next(NUMBERS):04d}"
        channel.violations.clear()
        ids = [engine.start(contact, todos=["Which day?", "Which number?"])]
        for op in ops:
            _apply(engine, channel, contact, ids, op)
        _settle(engine, channel, contact)
        assert channel.violations == []
        assert examine(engine.relay) == []

    run()
