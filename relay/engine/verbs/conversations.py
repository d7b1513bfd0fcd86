"""The conversation commands and reads: show, list, transcript, history, pause,
resume, cancel, send and retry; each one transaction, each a function of the
:class:`~relay.engine.runtime.Context` that :class:`relay.api.Relay` delegates to.

Starting is :mod:`relay.engine.verbs.starting`, the contact verbs
:mod:`relay.engine.verbs.contact_verbs`, what arrives :mod:`relay.engine.verbs.incoming`
and the other reads :mod:`relay.engine.verbs.lookups`.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import Row
from sqlalchemy.orm import Session

from relay.core.errors import InvalidInput, Refused
from relay.core.states import HEARTBEAT_STATES, NEEDS_PERSON, TERMINAL, Event, State, holds_slot
from relay.core.values import Author, EventKind, MessageStatus
from relay.engine.contacts.addresses import normalise
from relay.engine.conversation import audit, forecast
from relay.engine.conversation.audit import OPERATOR
from relay.engine.runtime import Context, Runtime
from relay.engine.verbs.lookups import parse_state
from relay.engine.views.instances import InstanceView, MessageView, TransitionView
from relay.engine.views.reports import why
from relay.store import arrivals, contacts, queries
from relay.store import instances as store_instances
from relay.store import messages as store_messages

# The write side (transitions, audit, inbound, the outbox, the ORM's mapped
# classes) is imported by the verbs that use it: a read command (list, show,
# status) loads none of it and reads Core rows.
if TYPE_CHECKING:
    from relay.store.models import Instance


def get(rt: Runtime, instance_id: str) -> InstanceView:
    with rt.store.read_transaction() as session:
        return view_of(rt, session, store_instances.row(session, instance_id))


def instances(
    rt: Runtime,
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
    address = normalise(rt, contact) if contact else None
    with rt.store.read_transaction() as session:
        rows = store_instances.newest(
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


def transcript(rt: Runtime, instance_id: str) -> list[MessageView]:
    with rt.store.read_transaction() as session:
        instance = store_instances.row(session, instance_id)
        address = contacts.address_of(session, instance.contact_id)
        transcript = store_messages.transcript_of(session, instance.id)
        return [MessageView.build(m, address) for m in transcript]


def history(rt: Runtime, instance_id: str, *, commands: bool = False) -> list[TransitionView]:
    """The transition log; with ``commands``, the audited operator commands too."""
    with rt.store.read_transaction() as session:
        instance = store_instances.row(session, instance_id)
        rows = [TransitionView.build(r) for r in queries.history_of(session, instance.id)]
    if not commands:
        return rows
    from relay.engine.verbs.program import read_events

    audited = read_events(rt, instance_ids=[instance.id], kinds=[EventKind.COMMAND.value])
    rows += [TransitionView.command(event) for event in audited]
    # Stable: a command and the state change it caused share a time; the
    # command is listed first.
    return sorted(rows, key=lambda r: (r.at, r.kind != "command"))


def view_of(
    rt: Runtime, session: Session, instance: Instance | Row[Any], since: datetime | None = None
) -> InstanceView:
    """The instance's view: a Core row read by ``show``, or the mapped object a
    command changed (its changes flushed before these reads); ``since``: the
    command's time, for what it reports in flight (:func:`relay.store.messages.in_flight`)."""
    address = contacts.address_of(session, instance.contact_id)
    todos = queries.todo_rows_for(session, [instance.id], whole=True)[instance.id]
    upcoming = forecast.next_message(session, instance, rt.config, rt.now())
    late = arrivals.late_replies(session, instance.id) if State(instance.state).terminal else 0
    return InstanceView.build(
        instance,
        address,
        todos,
        forecast=upcoming,
        late_replies=late,
        in_flight=store_messages.in_flight(session, instance.id, since),
        reason=why(instance, queries.latest_reasons(session, [instance.id]).get(instance.id)),
    )


# -- operator verbs -----------------------------------------------------


def _event(
    rt: Context,
    instance_id: str,
    event: Event,
    *,
    reason: str | None = None,
    actor: str = OPERATOR,
    paused_until: datetime | None = None,
) -> InstanceView:
    from relay.engine.conversation import transitions
    from relay.store.outbox import cancel_outbox

    with rt.store.transaction() as session:
        instance = store_instances.resolve(session, instance_id, lock=True)
        now = rt.now()
        transitions.apply_event(session, instance, event, now=now, actor=actor, reason=reason)
        if actor == OPERATOR:
            args = {
                "reason": reason,
                "until": paused_until.isoformat() if paused_until else None,
            }
            audit.record(session, event.value, instance.id, args, now, actor=rt.who())
        if event is Event.PAUSE:
            instance.paused_until = paused_until
        if event is Event.CANCEL:
            cancel_outbox(session, instance.id)
        return view_of(rt, session, instance, since=now)


def pause(
    rt: Context, instance_id: str, *, reason: str | None = None, until: datetime | None = None
) -> InstanceView:
    if until is not None and until <= rt.now():
        raise InvalidInput("until must be in the future")
    return _event(rt, instance_id, Event.PAUSE, reason=reason, paused_until=until)


def resume(rt: Context, instance_id: str, *, actor: str = OPERATOR) -> InstanceView:
    return _event(rt, instance_id, Event.RESUME, actor=actor)


def cancel(rt: Context, instance_id: str, *, reason: str | None = None) -> InstanceView:
    return _event(rt, instance_id, Event.CANCEL, reason=reason)


def send(rt: Context, instance_id: str, text: str, *, actor: str = OPERATOR) -> MessageView:
    """Queue an operator message; from NEEDS_HUMAN_INTERVENTION it moves the
    instance on (manual_send, then message_sent: the operator's message is
    the turn, so the conversation waits for the contact's reply)."""
    from relay.engine.conversation import transitions
    from relay.engine.verbs.new_conversation import clean_text
    from relay.store.outbox import queue_outbound

    body = clean_text(text, "message")
    with rt.store.transaction() as session:
        instance = store_instances.resolve(session, instance_id, lock=True)
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
        now = rt.now()
        message = queue_outbound(session, instance, body, Author.OPERATOR, now)
        transitions.record_queued(session, message, now)
        if actor == OPERATOR:
            args = {"message_id": message.id, "length": len(body)}
            audit.record(session, "send", instance.id, args, now, actor=rt.who())
        if state in NEEDS_PERSON:
            # The operator read and answered what the contact wrote meanwhile;
            # the agent must not answer it a second time.
            for waiting in store_messages.unprocessed_inbound(session, instance.id):
                waiting.status = MessageStatus.PROCESSED.value
                waiting.processed_at = now
            transitions.apply_event(session, instance, Event.MANUAL_SEND, now=now, actor=actor)
            transitions.apply_event(session, instance, Event.MESSAGE_SENT, now=now, actor=actor)
        elif state in HEARTBEAT_STATES:
            # The silence now counts from the operator's message.
            instance.next_heartbeat_at = now + timedelta(seconds=instance.heartbeat_seconds)
            instance.version += 1
        return MessageView.build(message, contacts.address_of(session, instance.contact_id))


def retry(rt: Context, message_id: int) -> MessageView:
    """Queue a failed delivery, or one whose fate a crash left unknown, again;
    refused unless its conversation is live."""
    from relay.engine.verbs import operations

    with rt.store.transaction() as session:
        return operations.retry(session, message_id, rt.now())


def deliver(rt: Runtime, message_id: int) -> MessageView:
    """Try to deliver one queued message now, after what of its conversation is due
    before it (a conversation's messages go in order)."""
    from relay.engine.outbox.dispatcher import Dispatcher
    from relay.engine.runtime import Channels
    from relay.engine.verbs import operations

    batch = rt.config.settings.daemon.batch
    Dispatcher(rt, Channels(rt)).deliver_due(batch, message_id=message_id)
    with rt.store.read_transaction() as session:
        return operations.message_view(session, message_id)
