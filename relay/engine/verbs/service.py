"""The service layer: the conversation commands, each one transaction.

:class:`relay.api.Relay` is the public face of this class; starting
(:mod:`relay.engine.verbs.starting`), the contact verbs (:mod:`relay.engine.verbs.contact_verbs`)
and the reads (:mod:`relay.engine.verbs.lookups`) are its mixins, one module each.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Self

from sqlalchemy import Row
from sqlalchemy.orm import Session

from relay.config import Config, load_config
from relay.core.clock import Clock, SystemClock
from relay.core.errors import InvalidInput, Refused
from relay.core.states import HEARTBEAT_STATES, NEEDS_PERSON, TERMINAL, Event, State, holds_slot
from relay.core.values import Author, MessageStatus
from relay.engine.contacts.addresses import Address, normalise_address
from relay.engine.conversation import audit, forecast
from relay.engine.conversation.audit import OPERATOR
from relay.engine.verbs.contact_verbs import ContactVerbs
from relay.engine.verbs.lookups import Lookups, parse_state
from relay.engine.verbs.starting import Starting
from relay.engine.views.instances import InstanceView, MessageView, TransitionView
from relay.engine.views.reports import why
from relay.store import arrivals, contact_rows, instance_rows, queries
from relay.store.database import Store
from relay.store.opening import open_store

# The write side (transitions, audit, inbound, the outbox, the ORM's mapped
# classes) is imported by the verbs that use it: a read command (list, show,
# status) loads none of it and reads Core rows.
if TYPE_CHECKING:
    from relay.channels.base import Incoming
    from relay.engine.contacts.bounce_marks import SoftBounces
    from relay.engine.inbound import ingest as inbound
    from relay.store.models import Instance
#: ``Relay.ingest`` without a poll position (a pushed request).
UNREAD = object()

log = logging.getLogger("relay.service")


class Relay(Starting, ContactVerbs, Lookups):
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
    def open(cls, config: Config | None = None, clock: Clock | None = None) -> Self:
        """Open the store ``config`` names (the default SQLite file is created on
        first use)."""
        config = config or load_config()
        store = open_store(config.database_url, create=config.uses_default_database)
        return cls(store, config, clock)

    def now(self) -> datetime:
        return self.clock.now()

    # -- contacts ---------------------------------------------------------

    def normalise(self, contact: str) -> str:
        return self.address(contact).value

    def address(self, contact: str) -> Address:
        return normalise_address(contact, self.config.settings.defaults.region)

    # -- reads ------------------------------------------------------------

    def get(self, instance_id: str) -> InstanceView:
        with self.store.read_transaction() as session:
            return self._view(session, instance_rows.instance_row(session, instance_id))

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
        state_value = parse_state(state).value if state else None
        address = self.normalise(contact) if contact else None
        with self.store.read_transaction() as session:
            rows = instance_rows.newest_instances(
                session, state=state_value, address=address, campaign=campaign, limit=limit
            )
            ids = [row.id for row in rows]
            todos = queries.todo_rows_for(session, ids, whole=True) if rows else {}
            reasons = queries.latest_reasons(session, ids)
            return [
                InstanceView.build(
                    row, row.address, todos[row.id], reason=why(row, reasons.get(row.id))
                )
                for row in rows
            ]

    def transcript(self, instance_id: str) -> list[MessageView]:
        with self.store.read_transaction() as session:
            instance = instance_rows.instance_row(session, instance_id)
            address = contact_rows.address_of(session, instance.contact_id)
            return [
                MessageView.build(m, address) for m in queries.transcript_of(session, instance.id)
            ]

    def history(self, instance_id: str, *, commands: bool = False) -> list[TransitionView]:
        """The transition log; with ``commands``, the audited operator commands too."""
        with self.store.read_transaction() as session:
            instance = instance_rows.instance_row(session, instance_id)
            rows = [TransitionView.build(r) for r in queries.history_of(session, instance.id)]
        if not commands:
            return rows
        from relay.engine.conversation import events as event_log
        audited = self.events(instance_ids=[instance.id], kinds=[event_log.Kind.COMMAND.value])
        rows += [TransitionView.command(event) for event in audited]
        # Stable: a command and the state change it caused share a time; the
        # command is listed first.
        return sorted(rows, key=lambda r: (r.at, r.kind != "command"))

    def _view(
        self, session: Session, instance: Instance | Row[Any], since: datetime | None = None
    ) -> InstanceView:
        """The instance's view: a Core row read by ``show``, or the mapped object a
        command changed (its changes flushed before these reads); ``since``: the
        command's time, for what it reports in flight (:func:`queries.in_flight`)."""
        address = contact_rows.address_of(session, instance.contact_id)
        todos = queries.todo_rows_for(session, [instance.id], whole=True)[instance.id]
        upcoming = forecast.next_message(session, instance, self.config, self.now())
        late = arrivals.late_replies(session, instance.id) if State(instance.state).terminal else 0
        return InstanceView.build(
            instance,
            address,
            todos,
            forecast=upcoming,
            late_replies=late,
            in_flight=queries.in_flight(session, instance.id, since),
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
        from relay.engine.conversation import transitions
        from relay.engine.outbox.outgoing import cancel_outbox

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
            return self._view(session, instance, since=now)

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
        from relay.engine.conversation import events as event_log
        from relay.engine.conversation import transitions
        from relay.engine.outbox.outgoing import queue_outbound
        from relay.engine.verbs.new_conversation import clean_text

        body = clean_text(text, "message")
        with self.store.transaction() as session:
            instance = queries.resolve_instance(session, instance_id, lock=True)
            state = State(instance.state)
            if state in TERMINAL:
                raise Refused(
                    f"instance {instance.id} is {state.value}; a finished conversation "
                    "takes no more messages"
                )
            if not holds_slot(state, transitions.previous_of(instance)):
                raise Refused(
                    f"instance {instance.id} is {state.value}, waiting for the contact's "
                    "live conversation to end; send on that one, or cancel it first"
                )
            now = self.now()
            message = queue_outbound(session, instance, body, Author.OPERATOR, now)
            event_log.record_queued(session, message, now)
            if actor == OPERATOR:
                args = {"message_id": message.id, "length": len(body)}
                audit.record(session, "send", instance.id, args, now, actor=self.who())
            if state in NEEDS_PERSON:
                # The operator read and answered what the contact wrote meanwhile;
                # the agent must not answer it a second time.
                for waiting in queries.unprocessed_inbound(session, instance.id):
                    waiting.status = MessageStatus.PROCESSED.value
                    waiting.processed_at = now
                transitions.apply_event(session, instance, Event.MANUAL_SEND, now=now, actor=actor)
                transitions.apply_event(session, instance, Event.MESSAGE_SENT, now=now, actor=actor)
            elif state in HEARTBEAT_STATES:
                # The silence now counts from the operator's message.
                instance.next_heartbeat_at = now + timedelta(seconds=instance.heartbeat_seconds)
                instance.version += 1
            return MessageView.build(message, contact_rows.address_of(session, instance.contact_id))

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
        The text is taken as a channel takes it: longer than
        :data:`~relay.engine.inbound.ingest.MAX_INBOUND` it is cut, with a note on the row.
        """
        from relay.engine.contacts import settling
        from relay.engine.contacts.optouts import opted_out_in
        from relay.engine.inbound import ingest as inbound

        address = self.address(contact)
        body = (text or "").replace("\x00", "").strip()
        if not body:
            raise InvalidInput("message must not be empty")
        arrival = inbound.Arrival(address, body, channel, provider_message_id)
        with self.store.transaction() as session:
            message = inbound.store_arrival(session, arrival, self.now(), keywords=self.keywords())
            if message is None:
                assert provider_message_id is not None
                message = arrivals.inbound_by_provider_id(session, channel, provider_message_id)
                assert message is not None
            view, opted_out = MessageView.build(message, address.value), opted_out_in(session)
        # Committed: a STOP is acknowledged once the sends under way have settled.
        settling.settle_all(self.store, opted_out, self.now)
        return view

    def ingest(
        self, channel: str, incoming: Incoming, *, read_from: str | object | None = UNREAD
    ) -> inbound.IngestReport:
        """Store what a channel brought in (messages, receipts) in one transaction.

        ``read_from``: the stored position the poll started from; the channel's new
        position (``incoming.cursor``) is stored in the same transaction, so what
        was read is either all stored with the position after it, or not at all
        and read again. A pushed request (``relay serve``) passes no position.
        """
        from relay.engine.contacts import settling
        from relay.store import failures

        try:
            report = failures.retry_conflicts(
                lambda: self._ingest(channel, incoming, read_from, careful=False)
            )
        except Exception as exc:
            if failures.is_transient(exc):
                raise
            # One item the database refuses must not hold back the others (and
            # the position): store them one by one, that one kept aside.
            log.warning("channel %s: storing one by one after %s", channel, failures.kind(exc))
            report = failures.retry_conflicts(
                lambda: self._ingest(channel, incoming, read_from, careful=True)
            )
        # Committed: an opt-out among what arrived (a STOP, an unsubscribe, a
        # complaint) is acknowledged once the sends under way have settled.
        settling.settle_all(self.store, report.opted_out, self.now)
        return report

    def _ingest(
        self, channel: str, incoming: Incoming, read_from: str | object | None, *, careful: bool
    ) -> inbound.IngestReport:
        from relay.engine.inbound import ingest as inbound

        with self.store.transaction() as session:
            arrivals.lock_channel(session, channel)
            now = self.now()
            report = inbound.ingest(
                session,
                channel,
                incoming,
                now,
                resolve=self.address,
                keywords=self.keywords(),
                careful=careful,
                bounces=self.soft_bounces(),
            )
            if incoming.cursor is not None and read_from is not UNREAD:
                assert read_from is None or isinstance(read_from, str)
                moved = arrivals.advance_cursor(
                    session, channel, read=read_from, position=incoming.cursor, now=now
                )
                if not moved:
                    log.debug("channel %s: another poller moved the position first", channel)
            return report

    def move_position(self, key: str, *, read: str | None, position: str) -> bool:
        """Move a stored read position (a notify target's) from ``read`` to ``position``."""
        with self.store.transaction() as session:
            return arrivals.advance_cursor(
                session, key, read=read, position=position, now=self.now()
            )

    def channel_position(self, channel: str) -> str | None:
        # A read: on SQLite it must not take the write lock (a daemon's poll
        # would queue behind its own pulse's writes for a value they never change).
        with self.store.read_transaction() as session:
            return arrivals.channel_cursor(session, channel)

    def soft_bounces(self) -> SoftBounces:
        """``[bounces]``: when repeated soft bounces mark an address undeliverable."""
        from relay.engine.contacts.bounce_marks import SoftBounces

        policy = self.config.settings.bounces
        return SoftBounces(policy.soft_limit, policy.soft_window)

    def keywords(self) -> inbound.Keywords:
        from relay.engine.inbound import ingest as inbound
        optout = self.config.settings.optout
        return inbound.Keywords.from_config(optout.keywords, optout.optin_keywords)

    def retry(self, message_id: int) -> MessageView:
        """Queue a failed delivery again; refused unless its conversation is live."""
        from relay.engine.verbs import operations
        with self.store.transaction() as session:
            return operations.retry(session, message_id, self.now())
