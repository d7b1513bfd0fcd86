"""The service layer: relay's public Python API. Each command is one transaction.

The CLI is a thin shell over :class:`Relay`; a program can use it directly::

    from relay.engine.service import Relay
    relay = Relay.open()
    view = relay.start("+15551230001", "Confirm the delivery date", ["Ask for the date"])
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from relay.channels.base import Incoming
from relay.config import Config, load_config
from relay.core.clock import Clock, SystemClock
from relay.core.durations import format_duration, parse_duration
from relay.core.errors import ConfigError, InvalidInput, OptedOut, Refused, Undeliverable
from relay.core.states import TERMINAL, Event, State, holds_slot
from relay.core.values import Author, Direction, MessageStatus, TodoStatus
from relay.engine import contacts, forecast, inbound, transitions
from relay.engine.addresses import Address, normalise_address
from relay.engine.backends import setup_problems
from relay.engine.store_setup import open_store
from relay.engine.transitions import previous_of
from relay.engine.views import (
    ContactView,
    DaemonView,
    InstanceView,
    MessageView,
    StatusView,
    TransitionView,
)
from relay.store import claims, queries
from relay.store.database import Store
from relay.store.ids import new_instance_id
from relay.store.models import Contact, Daemon, Instance, Message, Todo

OPERATOR = "operator"
#: ``Relay.ingest`` without a poll position (a pushed request).
UNREAD = object()

log = logging.getLogger("relay.service")
#: A daemon that has not pulsed for this long is not counted as live.
DAEMON_SILENCE = timedelta(minutes=2)
MAX_TEXT = 10_000
MAX_FOLLOWUPS = 1000


class Relay:
    """Conversation commands over one store, with an injectable clock."""

    def __init__(self, store: Store, config: Config, clock: Clock | None = None) -> None:
        self.store = store
        self.config = config
        self.clock: Clock = clock or SystemClock()

    @classmethod
    def open(cls, config: Config | None = None, clock: Clock | None = None) -> Relay:
        config = config or load_config()
        return cls(open_store(config), config, clock)

    def now(self) -> datetime:
        return self.clock.now()

    # -- contacts ---------------------------------------------------------

    def normalise(self, contact: str) -> str:
        return self.address(contact).value

    def address(self, contact: str) -> Address:
        return normalise_address(contact, str(self.config.get("defaults.region") or "US"))

    def _contact(self, session: Session, address: str, *, create: bool) -> Contact:
        if not create:
            return contacts.find(session, address)
        return contacts.find_or_create(session, self.address(address), self.now())

    # -- start ------------------------------------------------------------

    def start(
        self,
        contact: str,
        objective: str,
        todos: Sequence[str],
        *,
        heartbeat: str | timedelta | None = None,
        max_followups: int | None = None,
        channel: str | None = None,
        agent: str | None = None,
        window: str | None = None,
        actor: str = OPERATOR,
        subject: str | None = None,
    ) -> InstanceView:
        """Create an instance: CREATED, or QUEUED behind the contact's live one.

        ``subject`` is the conversation's subject on channels that have one
        (email); without it, one is made from the objective
        (:func:`relay.core.subjects.subject_from_objective`).
        """
        from relay.core.subjects import clean_subject, subject_from_objective

        address = self.normalise(contact)
        objective = _clean_text(objective, "objective")
        todo_texts = [_clean_text(t, "todo") for t in todos]
        title = clean_subject(subject) if subject else subject_from_objective(objective)
        interval = _interval(heartbeat or str(self.config.get("defaults.heartbeat")))
        followups = self._max_followups(max_followups)
        channel = channel or str(self.config.get("defaults.channel"))
        agent = agent or str(self.config.get("agent.backend"))
        self._check_backends(channel, agent, window, address)
        with self.store.transaction() as session:
            person = self._contact(session, address, create=True)
            queries.lock_contact(session, person.id)
            if person.opted_out_at is not None:
                raise OptedOut(
                    f"contact {address} has opted out; they must opt in again "
                    "(START from them, or `relay contact opt-in`)"
                )
            if person.undeliverable_at is not None:
                raise Undeliverable(
                    f"contact {address} is undeliverable ({person.undeliverable_reason}); "
                    "`relay contact deliverable` clears it once the address is fixed"
                )
            now = self.now()
            instance = self._insert_instance(
                session, person, objective, interval, followups, channel, agent, window, now
            )
            instance.subject = title
            for position, text in enumerate(todo_texts, start=1):
                session.add(
                    Todo(
                        instance_id=instance.id,
                        position=position,
                        text=text,
                        status=TodoStatus.PENDING.value,
                        updated_at=now,
                    )
                )
            transitions.record_creation(session, instance, now=now, actor=actor)
            self._take_slot(session, instance, now, actor)
            return self._view(session, instance)

    def _check_backends(
        self, channel: str, agent: str, window: str | None, address: str | None = None
    ) -> None:
        """Refuse what could never work before anything is created (exit 2): unknown
        names, a missing secret, an address the channel cannot reach."""
        from relay.agents.base import agent_names
        from relay.channels.base import channel_kinds
        from relay.core.windows import parse_window

        if agent not in agent_names():
            raise InvalidInput(f"unknown agent {agent!r} (known: {', '.join(agent_names())})")
        kind = str(self.config.get(f"channels.{channel}.type") or channel)
        if kind not in channel_kinds():
            raise InvalidInput(
                f"unknown channel {channel!r}: add a [channels.{channel}] section "
                f"with a type ({', '.join(channel_kinds())})"
            )
        spec = window if window is not None else self.config.get("defaults.window")
        if spec:
            parse_window(str(spec))
        problems = setup_problems(self.config, channel, agent, address)
        if problems:
            raise ConfigError("; ".join(problems))

    def _max_followups(self, value: int | None) -> int:
        followups = int(self.config.get("defaults.max_followups") if value is None else value)
        if not 0 <= followups <= MAX_FOLLOWUPS:
            raise InvalidInput(f"max_followups must be between 0 and {MAX_FOLLOWUPS}")
        return followups

    def _insert_instance(
        self,
        session: Session,
        person: Contact,
        objective: str,
        interval: timedelta,
        followups: int,
        channel: str,
        agent: str,
        window: str | None,
        now: datetime,
    ) -> Instance:
        instance = Instance(
            id=new_instance_id(),
            contact_id=person.id,
            state=State.CREATED.value,
            objective=objective,
            channel=channel,
            agent=agent,
            window=window or (str(self.config.get("defaults.window") or "") or None),
            heartbeat_seconds=int(interval.total_seconds()),
            max_followups=followups,
            follow_up_count=0,
            version=0,
            turn_attempts=0,
            created_at=now,
            updated_at=now,
        )
        session.add(instance)
        session.flush()
        return instance

    def _take_slot(self, session: Session, instance: Instance, now: datetime, actor: str) -> None:
        """Claim the contact's slot, or queue behind its holder.

        The caller holds the contact's lock (:func:`queries.lock_contact`), as does
        every conversation that frees the slot, so what is seen here is what is;
        the unique index stays as the last word.
        """
        taken = queries.slot_holder(session, instance.contact_id) is not None
        if not taken:
            try:
                with session.begin_nested():
                    instance.contact_slot = instance.contact_id
                    session.flush()
            except IntegrityError as exc:
                if not queries.is_slot_violation(exc):
                    raise
                instance.contact_slot = None
                taken = True
        if taken:
            transitions.apply_event(
                session,
                instance,
                Event.CONTACT_HAS_ACTIVE_INSTANCE,
                now=now,
                actor=actor,
                reason="another conversation with this contact is live",
            )

    # -- reads ------------------------------------------------------------

    def get(self, instance_id: str) -> InstanceView:
        with self.store.read_transaction() as session:
            return self._view(session, queries.resolve_instance(session, instance_id))

    def list(
        self,
        *,
        state: str | None = None,
        contact: str | None = None,
        limit: int = 50,
    ) -> list[InstanceView]:
        """Instances newest first, optionally filtered by state and contact."""
        if limit < 1:
            raise InvalidInput("limit must be at least 1")
        query = select(Instance, Contact).join(Contact, Contact.id == Instance.contact_id)
        if state:
            query = query.where(Instance.state == parse_state(state).value)
        if contact:
            query = query.where(Contact.address == self.normalise(contact))
        query = query.order_by(Instance.seq.desc()).limit(limit)
        with self.store.read_transaction() as session:
            rows = session.execute(query).all()
            todos = queries.todos_for(session, [inst.id for inst, _ in rows]) if rows else {}
            return [InstanceView.build(inst, person, todos[inst.id]) for inst, person in rows]

    def transcript(self, instance_id: str) -> list[MessageView]:
        with self.store.read_transaction() as session:
            instance = queries.resolve_instance(session, instance_id)
            address = session.get(Contact, instance.contact_id).address  # type: ignore[union-attr]
            return [
                MessageView.build(m, address) for m in queries.transcript_of(session, instance.id)
            ]

    def history(self, instance_id: str) -> list[TransitionView]:
        with self.store.read_transaction() as session:
            instance = queries.resolve_instance(session, instance_id)
            return [TransitionView.build(r) for r in queries.history_of(session, instance.id)]

    def _view(self, session: Session, instance: Instance) -> InstanceView:
        person = session.get(Contact, instance.contact_id)
        assert person is not None
        todos = list(queries.todos_of(session, instance.id))
        upcoming = forecast.next_message(session, instance, self.config, self.now())
        late = queries.late_replies(session, instance.id) if State(instance.state).terminal else 0
        return InstanceView.build(
            instance,
            person,
            todos,
            next_message=upcoming,
            late_replies=late,
            in_flight=queries.in_flight(session, instance.id),
        )

    # -- operator verbs -----------------------------------------------------

    def _event(
        self,
        instance_id: str,
        event: Event,
        *,
        reason: str | None = None,
        actor: str = OPERATOR,
        paused_until: datetime | None = None,
    ) -> InstanceView:
        with self.store.transaction() as session:
            instance = queries.resolve_instance(session, instance_id, lock=True)
            now = self.now()
            transitions.apply_event(session, instance, event, now=now, actor=actor, reason=reason)
            if event is Event.PAUSE:
                instance.paused_until = paused_until
            if event is Event.CANCEL:
                _cancel_outbox(session, instance.id)
            return self._view(session, instance)

    def pause(
        self, instance_id: str, *, reason: str | None = None, until: datetime | None = None
    ) -> InstanceView:
        if until is not None and until <= self.now():
            raise InvalidInput("until must be in the future")
        return self._event(instance_id, Event.PAUSE, reason=reason, paused_until=until)

    def resume(self, instance_id: str, *, actor: str = OPERATOR) -> InstanceView:
        return self._event(instance_id, Event.RESUME, actor=actor)

    def cancel(self, instance_id: str, *, reason: str | None = None) -> InstanceView:
        return self._event(instance_id, Event.CANCEL, reason=reason)

    def send(self, instance_id: str, text: str, *, actor: str = OPERATOR) -> MessageView:
        """Queue an operator message; from NEEDS_HUMAN_INTERVENTION it moves the
        instance on (manual_send, then message_sent: the operator's message is
        the turn, so the conversation waits for the contact's reply)."""
        body = _clean_text(text, "message")
        with self.store.transaction() as session:
            instance = queries.resolve_instance(session, instance_id, lock=True)
            state = State(instance.state)
            if state in TERMINAL:
                raise Refused(
                    f"instance {instance.id} is {state.value}; a finished conversation "
                    "takes no more messages"
                )
            if not holds_slot(state, previous_of(instance)):
                raise Refused(
                    f"instance {instance.id} is {state.value}, waiting for the contact's "
                    "live conversation to end; send on that one, or cancel it first"
                )
            person = session.get(Contact, instance.contact_id)
            assert person is not None
            now = self.now()
            message = queue_outbound(session, instance, body, Author.OPERATOR, now)
            if state is State.NEEDS_HUMAN_INTERVENTION:
                # The operator read and answered what the contact wrote meanwhile;
                # the agent must not answer it a second time.
                for waiting in queries.unprocessed_inbound(session, instance.id):
                    waiting.status = MessageStatus.PROCESSED.value
                    waiting.processed_at = now
                transitions.apply_event(session, instance, Event.MANUAL_SEND, now=now, actor=actor)
                transitions.apply_event(session, instance, Event.MESSAGE_SENT, now=now, actor=actor)
            elif state is State.WAITING_FOR_REPLY:
                # The silence now counts from the operator's message.
                instance.next_heartbeat_at = now + timedelta(seconds=instance.heartbeat_seconds)
                instance.version += 1
            return MessageView.build(message, person.address)

    def receive(
        self,
        contact: str,
        text: str,
        *,
        channel: str = "cli",
        provider_message_id: str | None = None,
    ) -> MessageView:
        """Store an inbound message at once and route it to the contact's live instance.

        A message a channel delivers twice (same ``provider_message_id`` on the
        same channel) is recorded once; the second call returns the first row.
        """
        address = self.address(contact)
        body = _clean_text(text, "message")
        arrival = inbound.Arrival(address, body, channel, provider_message_id)
        with self.store.transaction() as session:
            message = inbound.store_arrival(session, arrival, self.now(), keywords=self.keywords())
            if message is None:
                assert provider_message_id is not None
                message = queries.inbound_by_provider_id(session, channel, provider_message_id)
                assert message is not None
            return MessageView.build(message, address.value)

    def ingest(
        self, channel: str, incoming: Incoming, *, read_from: str | object | None = UNREAD
    ) -> inbound.IngestReport:
        """Store what a channel brought in (messages, receipts) in one transaction.

        ``read_from``: the stored position the poll started from; the channel's new
        position (``incoming.cursor``) is stored in the same transaction, so what
        was read is either all stored with the position after it, or not at all
        and read again. A pushed request (``relay serve``) passes no position.
        """
        with self.store.transaction() as session:
            queries.lock_channel(session, channel)
            now = self.now()
            report = inbound.ingest(
                session, channel, incoming, now, resolve=self.address, keywords=self.keywords()
            )
            if incoming.cursor is not None and read_from is not UNREAD:
                assert read_from is None or isinstance(read_from, str)
                moved = queries.advance_cursor(
                    session, channel, read=read_from, position=incoming.cursor, now=now
                )
                if not moved:
                    log.debug("channel %s: another poller moved the position first", channel)
            return report

    def channel_position(self, channel: str) -> str | None:
        with self.store.transaction() as session:
            return queries.channel_cursor(session, channel)

    def keywords(self) -> inbound.Keywords:
        return inbound.Keywords.from_config(
            self.config.get("optout.keywords") or "", self.config.get("optout.optin_keywords") or ""
        )

    # -- contacts -----------------------------------------------------------

    def contact(self, contact: str) -> ContactView:
        address = self.normalise(contact)
        with self.store.read_transaction() as session:
            person = self._contact(session, address, create=False)
            return self._contact_view(session, person)

    def _contact_view(self, session: Session, person: Contact) -> ContactView:
        holder = queries.slot_holder(session, person.id)
        waiting = queries.queued_instances(session, person.id)
        unrouted = session.scalars(
            select(Message)
            .where(Message.contact_id == person.id, Message.instance_id.is_(None))
            .order_by(Message.id)
        ).all()
        return ContactView(
            address=person.address,
            kind=person.kind,
            timezone=person.timezone,
            opted_out_at=person.opted_out_at,
            live_instance=holder.id if holder else None,
            queued=tuple(i.id for i in waiting),
            unrouted=tuple(MessageView.build(m, person.address) for m in unrouted),
        )

    def opt_out(self, contact: str, *, reason: str = "operator") -> ContactView:
        """Mark the contact opted out: its live conversation ends, nothing more is sent."""
        address = self.normalise(contact)
        with self.store.transaction() as session:
            person = self._contact(session, address, create=True)
            inbound.opt_out(session, person, self.now(), reason=f"operator: {reason}")
            return self._contact_view(session, person)

    def opt_in(self, contact: str) -> ContactView:
        address = self.normalise(contact)
        with self.store.transaction() as session:
            person = self._contact(session, address, create=False)
            inbound.opt_in(person, self.now())
            return self._contact_view(session, person)

    def set_contact(self, contact: str, *, timezone: str | None = None) -> ContactView:
        address = self.normalise(contact)
        if timezone is not None:
            check_timezone(timezone)
        with self.store.transaction() as session:
            person = self._contact(session, address, create=True)
            if timezone is not None:
                person.timezone = timezone
                person.updated_at = self.now()
            return self._contact_view(session, person)

    # -- status -------------------------------------------------------------

    def status(self) -> StatusView:
        with self.store.read_transaction() as session:
            states = queries.count_by(session, Instance.state)
            outbound = queries.count_by(
                session, Message.status, Message.direction == Direction.OUTBOUND.value
            )
            unrouted = session.scalar(
                select(func.count())
                .select_from(Message)
                .where(Message.instance_id.is_(None), Message.direction == Direction.INBOUND.value)
            )
            late, rejected = queries.inbound_trouble(session)
            now = self.now()
            # Live: pulsed recently and not stopped (a killed daemon never records its stop).
            daemons = session.scalars(
                select(Daemon)
                .where(Daemon.stopped_at.is_(None), Daemon.last_pulse_at >= now - DAEMON_SILENCE)
                .order_by(Daemon.started_at)
            ).all()
            last_seen = session.scalar(select(func.max(Daemon.last_pulse_at)))
            # Turns, heartbeats, snoozes and deliveries due now (held ones are not due yet).
            due = claims.count_due(session, now)
            # Work due for longer than a daemon may stay silent: nobody is doing it
            # (with cron, `relay tick` every minute keeps this at zero).
            overdue = claims.count_due(session, now, due_by=now - DAEMON_SILENCE)
        pending = outbound.get("queued", 0) + outbound.get("sending", 0)
        warnings = []
        stale = last_seen is None or (now - last_seen) > DAEMON_SILENCE
        if overdue and stale:
            warnings.append(
                f"{overdue} item(s) of work have been due for over "
                f"{format_duration(DAEMON_SILENCE)} and no daemon has pulsed recently; "
                "run `relay daemon` or `relay tick`"
            )
        return StatusView(
            states={s.value: states.get(s.value, 0) for s in State},
            queue_depth=states.get(State.QUEUED.value, 0),
            outbox_pending=pending,
            outbox_failed=outbound.get("failed", 0),
            unrouted_inbound=int(unrouted or 0),
            late_inbound=late,
            rejected_inbound=rejected,
            work_due=due,
            daemons=tuple(
                DaemonView(d.id, d.host, d.pid, d.started_at, d.last_pulse_at) for d in daemons
            ),
            last_daemon_seen=last_seen,
            warnings=tuple(warnings),
        )


def queue_outbound(
    session: Session,
    instance: Instance,
    body: str,
    author: Author,
    now: datetime,
    *,
    proactive: bool = False,
    flush: bool = True,
) -> Message:
    """Write an outbound message as an outbox row; the dispatcher delivers it.

    ``flush=False`` leaves the insert to the transaction's commit (a batch of
    turns writes its rows together); the message then has no id yet.
    """
    message = Message(**outbound_row(instance, body, author, now, proactive=proactive))
    session.add(message)
    if flush:
        session.flush()
    return message


def outbound_row(
    instance: Instance, body: str, author: Author, now: datetime, *, proactive: bool = False
) -> dict[str, Any]:
    """The columns of a new outbox row: :func:`queue_outbound` makes an ORM object of
    them; a batch of turn commits inserts its rows with one statement instead."""
    return {
        "instance_id": instance.id,
        "contact_id": instance.contact_id,
        "direction": Direction.OUTBOUND.value,
        "author": author.value,
        "body": body,
        "status": MessageStatus.QUEUED.value,
        "channel": instance.channel,
        "idempotency_key": uuid.uuid4().hex,
        "attempts": 0,
        "next_attempt_at": now,
        "proactive": int(proactive),
        "created_at": now,
    }


def _cancel_outbox(session: Session, instance_id: str) -> None:
    """A cancelled conversation sends nothing more, not even what was queued."""
    for message in session.scalars(
        select(Message).where(
            Message.instance_id == instance_id, Message.status == MessageStatus.QUEUED.value
        )
    ):
        message.status = MessageStatus.CANCELLED.value
        message.next_attempt_at = None


def _clean_text(text: str, what: str) -> str:
    # NUL never means anything in a message, and PostgreSQL text cannot hold it:
    # a channel that hands one over must not fail the whole pulse.
    cleaned = (text or "").replace("\x00", "").strip()
    if not cleaned:
        raise InvalidInput(f"{what} must not be empty")
    if len(cleaned) > MAX_TEXT:
        raise InvalidInput(f"{what} is longer than {MAX_TEXT} characters")
    return cleaned


def _interval(value: str | timedelta) -> timedelta:
    return value if isinstance(value, timedelta) else parse_duration(value)


def check_timezone(name: str) -> None:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidInput(
            f"unknown time zone {name!r} (use an IANA name like Europe/Madrid)"
        ) from None


def parse_state(text: str) -> State:
    try:
        return State(text.strip().upper())
    except ValueError:
        names = ", ".join(s.value for s in State)
        raise InvalidInput(f"unknown state {text!r} (states: {names})") from None
