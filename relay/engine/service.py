"""The service layer: relay's public Python API. Each command is one transaction.

The CLI is a thin shell over :class:`Relay`; a program can use it directly::

    from relay.engine.service import Relay
    relay = Relay.open()
    view = relay.start("+15551230001", "Confirm the delivery date", ["Ask for the date"])
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from relay.channels.base import Incoming
from relay.config import Config, load_config
from relay.core.clock import Clock, SystemClock
from relay.core.errors import ConfigError, InvalidInput, OptedOut, Refused, Undeliverable
from relay.core.states import TERMINAL, Event, State, holds_slot
from relay.core.values import Author, MessageStatus, TodoStatus
from relay.engine import audit, chat_links, contacts, forecast, inbound, operations, transitions
from relay.engine import events as event_log
from relay.engine.addresses import Address, normalise_address
from relay.engine.backends import setup_problems
from relay.engine.chat_links import ChatLink
from relay.engine.lookups import Lookups, as_interval, parse_state
from relay.engine.outgoing import cancel_outbox, queue_outbound
from relay.engine.report_views import why
from relay.engine.store_setup import open_store
from relay.engine.transitions import previous_of
from relay.engine.views import ContactView, InstanceView, MessageView, TransitionView
from relay.store import queries
from relay.store.database import Store
from relay.store.ids import new_instance_id
from relay.store.models import Contact, Instance, Message, Todo

if TYPE_CHECKING:
    from relay.engine.campaigns import ImportReport

OPERATOR = "operator"
#: Delivery states of a first message, worst first: what ``start`` reports.
_WORST_FIRST = ("failed", "blocked", "queued", "sending")
#: ``Relay.ingest`` without a poll position (a pushed request).
UNREAD = object()

log = logging.getLogger("relay.service")
#: A daemon that has not pulsed for this long is not counted as live.
MAX_TEXT = 10_000
MAX_FOLLOWUPS = 1000


@dataclass(frozen=True)
class NewConversation:
    """A conversation to create, checked and normalised (:meth:`Relay.prepare`)."""

    address: str
    objective: str
    todos: tuple[str, ...]
    subject: str | None
    heartbeat: timedelta
    max_followups: int
    channel: str
    agent: str
    window: str | None = None
    campaign: str | None = None
    #: One row of one import (``relay import``): unique, so a re-run starts nothing twice.
    import_key: str | None = None
    #: Fields to merge into the contact's (an import's columns).
    contact_fields: dict[str, Any] | None = None
    timezone: str | None = None
    #: What kind of answer each todo wants, in todo order (default: free text).
    answers: tuple[Any, ...] = ()
    meta: dict[str, Any] | None = None
    result_schema: dict[str, Any] | None = None
    #: The conversation's own WhatsApp template (:func:`relay.core.templates.content_template`).
    template: dict[str, Any] | None = None


def answer_columns(spec: NewConversation, position: int) -> dict[str, Any]:
    """The todo's answer kind, choices and whether it is required (the same keys
    for every todo, so a bulk insert can write many rows in one statement)."""
    if position > len(spec.answers):
        return {"answer_kind": "text", "answer_spec": None, "required": 1}
    answer = spec.answers[position - 1]
    return {
        "answer_kind": answer.kind.value,
        "answer_spec": {"choices": list(answer.choices)} if answer.choices else None,
        "required": int(answer.required),
    }


class Relay(Lookups):
    """Conversation commands over one store, with an injectable clock."""

    def __init__(self, store: Store, config: Config, clock: Clock | None = None) -> None:
        self.store = store
        self.config = config
        self.clock: Clock = clock or SystemClock()
        #: Who runs operator commands, for the audit log (default: the OS user).
        self.actor: str | None = None

        self._built_channels: dict[str, Any] = {}

    def who(self) -> str:
        if self.actor is None:
            self.actor = audit.os_user()
        return self.actor

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
        todos: Sequence[str | Mapping[str, Any]],
        *,
        heartbeat: str | timedelta | None = None,
        max_followups: int | None = None,
        channel: str | None = None,
        agent: str | None = None,
        window: str | None = None,
        actor: str = OPERATOR,
        subject: str | None = None,
        meta: Mapping[str, Any] | None = None,
        result_schema: Mapping[str, Any] | None = None,
        campaign: str | None = None,
        template_sid: str | None = None,
        template_variables: Mapping[str, str] | None = None,
        defer: bool = True,
    ) -> InstanceView:
        """Create an instance: CREATED, or QUEUED behind the contact's live one.

        ``subject`` is the conversation's subject on channels that have one
        (email); without it, one is made from the objective
        (:func:`relay.core.subjects.subject_from_objective`).
        ``todos``: text, optionally ``"TEXT::KIND"`` for a structured answer
        (:mod:`relay.core.answers`), or ``{"text": ..., "answer": KIND}``.
        ``meta``: the caller's own JSON object, returned unchanged in every event
        and in ``get``/``result``. ``result_schema``: a JSON Schema for the
        answers, keyed by todo id. ``template_sid`` and ``template_variables``: the
        approved WhatsApp template sent when the 24-hour window is closed, in
        preference to the channel's (whatsapp channels only).
        """
        spec = self.prepare(
            contact,
            objective,
            todos,
            heartbeat=heartbeat,
            max_followups=max_followups,
            channel=channel,
            agent=agent,
            window=window,
            subject=subject,
            campaign=campaign,
            meta=meta,
            result_schema=result_schema,
            template_sid=template_sid,
            template_variables=template_variables,
        )
        reach = self._reach(spec.channel, spec.address)
        self._check_backends(spec.channel, spec.agent, spec.window, reach)
        with self.store.transaction() as session:
            instance = self.create(session, spec, self.now(), actor)
            view = self._view(session, instance)
        if defer or view.state != State.CREATED.value:
            return view
        return self._first_turn(view)

    def _first_turn(self, view: InstanceView) -> InstanceView:
        """Run the first turn now and say what became of its message; the
        conversation exists whatever happens here (the daemon runs it otherwise)."""
        from relay.engine.pulse import start_now

        try:
            outcome = start_now(self, view.id)
        except Exception as exc:
            note = f"the first turn did not run now ({exc}); the daemon or run_due will run it"
            return replace(self.get(view.id), first_turn_note=note)
        view = self.get(view.id)
        if outcome is None or not outcome.messages:
            return replace(view, first_turn_note=outcome.note if outcome else None)
        outbound = [m for m in self.transcript(view.id) if m.direction == "outbound"]
        status = next((s for s in _WORST_FIRST if s in {m.status for m in outbound}), "sent")
        errors = "; ".join(sorted({m.last_error for m in outbound if m.last_error}))
        return replace(
            view,
            first_message="\n".join(outcome.messages),
            first_message_status="queued" if status == "sending" else status,
            first_turn_note="; ".join(n for n in (outcome.note, errors) if n) or None,
        )

    def prepare(
        self,
        contact: str,
        objective: str,
        todos: Sequence[str | Mapping[str, Any]],
        *,
        heartbeat: str | timedelta | None = None,
        max_followups: int | None = None,
        channel: str | None = None,
        agent: str | None = None,
        window: str | None = None,
        subject: str | None = None,
        campaign: str | None = None,
        meta: Mapping[str, Any] | None = None,
        result_schema: Mapping[str, Any] | None = None,
        template_sid: str | None = None,
        template_variables: Mapping[str, str] | None = None,
    ) -> NewConversation:
        """Check and normalise what a new conversation needs, touching nothing
        (:meth:`start` and ``relay import`` both begin here)."""
        from relay.core.subjects import clean_subject, subject_from_objective
        from relay.engine.program import check_meta, todo_specs

        address = self.normalise(contact)
        objective = _clean_text(objective, "objective")
        specs = todo_specs(todos)
        channel = channel or str(self.config.get("defaults.channel"))
        return NewConversation(
            address=address,
            objective=objective,
            todos=tuple(_clean_text(text, "todo") for text, _ in specs),
            subject=clean_subject(subject) if subject else subject_from_objective(objective),
            heartbeat=as_interval(heartbeat or str(self.config.get("defaults.heartbeat"))),
            max_followups=self._max_followups(max_followups),
            channel=channel,
            agent=agent or str(self.config.get("agent.backend")),
            window=window,
            campaign=_campaign(campaign),
            answers=tuple(spec for _, spec in specs),
            meta=check_meta(meta),
            result_schema=_result_schema(result_schema),
            template=self._template(channel, template_sid, template_variables),
        )

    def _template(
        self, channel: str, sid: str | None, variables: Mapping[str, str] | None
    ) -> dict[str, Any] | None:
        from relay.core.templates import content_template

        template = content_template(sid, variables)
        kind = str(self.config.get(f"channels.{channel}.type") or channel)
        if template is not None and kind != "whatsapp":
            raise InvalidInput(
                f"a WhatsApp template is for whatsapp channels; channel {channel} is {kind}"
            )
        return template

    def create(
        self, session: Session, spec: NewConversation, now: datetime, actor: str = OPERATOR
    ) -> Instance:
        """Create the conversation in the caller's transaction (its contact too):
        CREATED, or QUEUED behind the contact's live one."""
        person = contacts.find_or_create(session, self.address(spec.address), now)
        queries.lock_contact(session, person.id)
        if person.opted_out_at is not None:
            raise OptedOut(
                f"contact {spec.address} has opted out; they must opt in again "
                "(START from them, or `relay contact opt-in`)"
            )
        if person.undeliverable_at is not None:
            raise Undeliverable(
                f"contact {spec.address} is undeliverable ({person.undeliverable_reason}); "
                "`relay contact deliverable` clears it once the address is fixed"
            )
        if spec.contact_fields:
            person.fields = {**(person.fields or {}), **spec.contact_fields}
            person.updated_at = now
        if spec.timezone:
            person.timezone = spec.timezone
            person.updated_at = now
        instance = self._insert_instance(session, person, spec, now)
        instance.meta = spec.meta or None
        instance.result_schema = spec.result_schema
        session.add_all(
            Todo(
                instance_id=instance.id,
                position=position,
                text=text,
                status=TodoStatus.PENDING.value,
                updated_at=now,
                **answer_columns(spec, position),
            )
            for position, text in enumerate(spec.todos, start=1)
        )
        transitions.record_creation(session, instance, now=now, actor=actor)
        if actor == OPERATOR:
            args: dict[str, Any] = {"contact": spec.address, "channel": spec.channel}
            args["agent"] = spec.agent
            args["todo_kinds"] = [answer.text() for answer in spec.answers]
            audit.record(session, "start", instance.id, args, now, actor=self.who())
        self._take_slot(session, instance, now, actor)
        return instance

    def check_backends(self, channel: str, agent: str, window: str | None) -> None:
        """Refuse a channel, agent or window that could never work (exit 2)."""
        self._check_backends(channel, agent, window)

    def address_problem(self, channel: str, address: str) -> str | None:
        """Why ``channel`` cannot reach ``address`` (an email channel and a phone
        number), or None; a contact's bound chat on the channel counts (asked only
        when the address itself is refused, so an import costs nothing more)."""
        check = getattr(self.channel(channel), "address_problem", None)
        if not callable(check):
            return None
        problem = check(address)
        if problem:
            reach = self._reach(channel, address)
            problem = check(reach) if reach != address else problem
        return problem

    def channel(self, name: str) -> Any:
        """Channel ``name`` built from its section, once per name (for checks and
        links; the dispatcher builds its own)."""
        from relay.channels.base import make_channel
        from relay.engine.backends import channel_settings

        built = self._built_channels.get(name)
        if built is None:
            built = make_channel(name, channel_settings(self.config, name))
            self._built_channels[name] = built
        return built

    def _reach(self, channel: str, address: str) -> str:
        """Where ``channel`` reaches the contact ``address``: its bound chat, if any."""
        with self.store.read_transaction() as session:
            person = queries.contact_by_address(session, address)
            if person is None:
                return address
            return chat_links.reach(session, channel, person.id, address)

    def contact_link(self, channel: str, contact: str) -> ChatLink:
        """The ``t.me/<bot>?start=<token>`` link binding a chat on ``channel`` to
        ``contact`` (see :mod:`relay.engine.chat_links`)."""
        return chat_links.link(self, channel, contact)

    def import_csv(
        self,
        path: str | Path,
        objective: str,
        todos: Sequence[str],
        *,
        campaign: str | None = None,
        dry_run: bool = False,
        heartbeat: str | None = None,
        max_followups: int | None = None,
        channel: str | None = None,
        agent: str | None = None,
        window: str | None = None,
        on_rows: Callable[[int], None] | None = None,
        on_total: Callable[[int], None] | None = None,
    ) -> ImportReport:
        """A conversation per CSV row (``relay import``); the first turns are left to
        the daemon. ``on_total`` hears the row count once the file is checked;
        ``on_rows`` how many more rows were handled."""
        from relay.engine import campaigns

        options = campaigns.Options(
            objective, tuple(todos), _campaign(campaign), heartbeat, max_followups, channel,
            agent, window,
        )  # fmt: skip
        rows = campaigns.read_rows(Path(path))
        planned = campaigns.plan(self, rows, options)
        if on_total is not None:
            on_total(len(planned))
        return campaigns.run(
            self, planned, campaign=options.campaign, dry_run=dry_run, progress=on_rows
        )

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
        self, session: Session, person: Contact, spec: NewConversation, now: datetime
    ) -> Instance:
        instance = Instance(
            id=new_instance_id(),
            contact_id=person.id,
            state=State.CREATED.value,
            objective=spec.objective,
            subject=spec.subject,
            channel=spec.channel,
            agent=spec.agent,
            window=spec.window or (str(self.config.get("defaults.window") or "") or None),
            heartbeat_seconds=int(spec.heartbeat.total_seconds()),
            max_followups=spec.max_followups,
            follow_up_count=0,
            version=0,
            turn_attempts=0,
            campaign=spec.campaign,
            import_key=spec.import_key,
            template=spec.template,
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

    def instances(
        self,
        *,
        state: str | None = None,
        contact: str | None = None,
        limit: int = 50,
        campaign: str | None = None,
    ) -> list[InstanceView]:
        """Instances newest first, optionally filtered by state, contact and campaign."""
        if limit < 1:
            raise InvalidInput("limit must be at least 1")
        query = select(Instance, Contact).join(Contact, Contact.id == Instance.contact_id)
        if state:
            query = query.where(Instance.state == parse_state(state).value)
        if contact:
            query = query.where(Contact.address == self.normalise(contact))
        if campaign:
            query = query.where(Instance.campaign == campaign)
        query = query.order_by(Instance.seq.desc()).limit(limit)
        with self.store.read_transaction() as session:
            rows = session.execute(query).all()
            ids = [inst.id for inst, _ in rows]
            todos = queries.todos_for(session, ids) if rows else {}
            reasons = queries.latest_reasons(session, ids)
            return [
                InstanceView.build(
                    inst, person, todos[inst.id], reason=why(inst, reasons.get(inst.id))
                )
                for inst, person in rows
            ]

    def transcript(self, instance_id: str) -> list[MessageView]:
        with self.store.read_transaction() as session:
            instance = queries.resolve_instance(session, instance_id)
            person = session.get(Contact, instance.contact_id)
            assert person is not None  # a foreign key: every instance has its contact
            address = person.address
            return [
                MessageView.build(m, address) for m in queries.transcript_of(session, instance.id)
            ]

    def history(self, instance_id: str, *, commands: bool = False) -> list[TransitionView]:
        """The transition log; with ``commands``, the audited operator commands too."""
        with self.store.read_transaction() as session:
            instance = queries.resolve_instance(session, instance_id)
            rows = [TransitionView.build(r) for r in queries.history_of(session, instance.id)]
        if not commands:
            return rows
        audited = self.events(instance_ids=[instance.id], kinds=[event_log.Kind.COMMAND.value])
        rows += [TransitionView.command(event) for event in audited]
        # Stable: a command and the state change it caused share a time; the
        # command is listed first.
        return sorted(rows, key=lambda r: (r.at, r.kind != "command"))

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
            reason=why(instance, queries.latest_reasons(session, [instance.id]).get(instance.id)),
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
            if actor == OPERATOR:
                args = {
                    "reason": reason,
                    "until": paused_until.isoformat() if paused_until else None,
                }
                audit.record(session, event.value, instance.id, args, now, actor=self.who())
            if event is Event.PAUSE:
                instance.paused_until = paused_until
            if event is Event.CANCEL:
                cancel_outbox(session, instance.id)
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
            event_log.record_queued(session, message, now)
            if actor == OPERATOR:
                args = {"message_id": message.id, "length": len(body)}
                audit.record(session, "send", instance.id, args, now, actor=self.who())
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

    def move_position(self, key: str, *, read: str | None, position: str) -> bool:
        """Move a stored read position (a notify target's) from ``read`` to ``position``."""
        with self.store.transaction() as session:
            return queries.advance_cursor(
                session, key, read=read, position=position, now=self.now()
            )

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
            fields=dict(person.fields or {}),
        )

    def opt_out(self, contact: str, *, reason: str = "operator") -> ContactView:
        """Mark the contact opted out: its live conversation ends, nothing more is sent."""
        address = self.normalise(contact)
        with self.store.transaction() as session:
            person = self._contact(session, address, create=True)
            inbound.opt_out(session, person, self.now(), reason=f"operator: {reason}")
            self._audit_contact(session, "opt-out", address, reason=reason)
            return self._contact_view(session, person)

    def opt_in(self, contact: str) -> ContactView:
        address = self.normalise(contact)
        with self.store.transaction() as session:
            person = self._contact(session, address, create=False)
            inbound.opt_in(person, self.now())
            self._audit_contact(session, "opt-in", address)
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
            self._audit_contact(session, "contact set", address, timezone=timezone)
            return self._contact_view(session, person)

    def _audit_contact(self, session: Session, command: str, address: str, **args: Any) -> None:
        """A contact-level command: in the log without an instance (``relay events``)."""
        args = {"contact": address, **args}
        audit.record(session, command, None, args, self.now(), actor=self.who())

    def retry(self, message_id: int) -> MessageView:
        """Queue a failed delivery again; refused unless its conversation is live."""
        with self.store.transaction() as session:
            return operations.retry(session, message_id, self.now())

def _clean_text(text: str, what: str) -> str:
    # NUL never means anything in a message, and PostgreSQL text cannot hold it:
    # a channel that hands one over must not fail the whole pulse.
    cleaned = (text or "").replace("\x00", "").strip()
    if not cleaned:
        raise InvalidInput(f"{what} must not be empty")
    if len(cleaned) > MAX_TEXT:
        raise InvalidInput(f"{what} is longer than {MAX_TEXT} characters")
    return cleaned


def _result_schema(schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if schema is None:
        return None
    from relay.engine.answers import check_schema

    return check_schema(dict(schema))
MAX_CAMPAIGN = 128


def _campaign(name: str | None) -> str | None:
    """A campaign tag: trimmed, not empty, at most 128 characters."""
    if name is None:
        return None
    cleaned = name.replace("\x00", "").strip()
    if not cleaned or len(cleaned) > MAX_CAMPAIGN:
        raise InvalidInput(f"--campaign must be 1 to {MAX_CAMPAIGN} characters")
    return cleaned


def check_timezone(name: str) -> None:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidInput(
            f"unknown time zone {name!r} (use an IANA name like Europe/Madrid)"
        ) from None
