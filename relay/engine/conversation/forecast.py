"""What an instance will send next, when, and why it waits (``relay show``'s "next
message"), as a :class:`relay.core.forecasts.Forecast`.

Read from the store only, the way the daemon will decide: an undelivered
outbox row first (held by a rate limit, waiting for a retry, or ready), then
the turn or heartbeat the instance's state makes due, with the sending window
applied to proactive messages.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import Row
from sqlalchemy.orm import Session

from relay.config import Config
from relay.core.forecasts import Delivery, Forecast, Next
from relay.core.states import (
    HEARTBEAT_STATES,
    PAUSED_STATES,
    QUEUED_STATES,
    TURN_REASONS,
    State,
    TurnReason,
)
from relay.core.values import MessageStatus
from relay.engine.conversation import policy
from relay.store import instances, queries
from relay.store import messages as store_messages

if TYPE_CHECKING:
    from relay.store.models import Instance, Message


def next_message(
    session: Session, instance: Instance | Row[Any], config: Config, now: datetime
) -> Forecast | None:
    """What comes next; None once the conversation has ended."""
    state = State(instance.state)
    if state.terminal:
        return None
    pending = store_messages.next_outbound(session, instance.id)
    if pending is not None:
        return _delivery(pending, now)
    if instance.drafts_pending:
        return Forecast(Next.APPROVAL, detail=str(instance.drafts_pending))
    if state in HEARTBEAT_STATES:
        return _heartbeat(session, instance, config, now)
    return _due(instance, state, now) or _held(session, instance, state)


def at_a_glance(instance: Instance | Row[Any], now: datetime) -> Forecast | None:
    """What comes next, read from the instance's row alone: no outbox, sending-window
    or queue look-up, so ``relay watch`` can show it for hundreds of rows per refresh
    (``relay show`` gives the whole story with :func:`next_message`)."""
    state = State(instance.state)
    if state.terminal:
        return None
    if instance.drafts_pending:
        return Forecast(Next.APPROVAL, detail=str(instance.drafts_pending))
    if state in HEARTBEAT_STATES:
        due = instance.next_heartbeat_at
        if due is None:
            return Forecast(Next.AWAIT_REPLY)
        if instance.follow_up_count >= instance.max_followups:
            return Forecast(Next.ABANDON, at=due, due=due <= now)
        return Forecast(Next.FOLLOW_UP, at=due, due=due <= now, number=_number(instance))
    if state in QUEUED_STATES:
        return Forecast(Next.QUEUED)
    if state in PAUSED_STATES:
        return Forecast(
            Next.PAUSED,
            until=instance.paused_until,
            remaining_seconds=instance.heartbeat_remaining_seconds,
        )
    return _due(instance, state, now) or Forecast(Next.PERSON)


def _due(instance: Instance | Row[Any], state: State, now: datetime) -> Forecast | None:
    """What the runner does next where a turn is due; None in the other states."""
    reason = TURN_REASONS.get(state)
    if reason is TurnReason.FIRST_MESSAGE:
        if instance.not_before is not None and instance.not_before > now:
            return Forecast(Next.FIRST_MESSAGE, until=instance.not_before)
        return Forecast(Next.FIRST_MESSAGE, due=True)
    if reason is TurnReason.FOLLOW_UP:
        return Forecast(Next.FOLLOW_UP, due=True, number=_number(instance))
    if reason is not None:  # a reply, or a turn resumed
        return Forecast(Next.REPLY, due=True)
    return None


def _held(session: Session, instance: Instance | Row[Any], state: State) -> Forecast:
    """What a conversation that no turn serves waits for: its turn in the queue, a
    resume, or a person."""
    if state in QUEUED_STATES:
        return Forecast(Next.QUEUED, detail=instances.slot_holder_id(session, instance.contact_id))
    if state in PAUSED_STATES:
        return Forecast(
            Next.PAUSED,
            until=instance.paused_until,
            remaining_seconds=instance.heartbeat_remaining_seconds,
        )
    # Why it went to a person (a WhatsApp template missing, a refusal).
    why = queries.latest_reasons(session, [instance.id]).get(instance.id)
    return Forecast(Next.PERSON, detail=why)


def _delivery(message: Message | Row[Any], now: datetime) -> Forecast:
    channel = message.channel or "console"
    when = message.next_attempt_at
    if message.status == MessageStatus.SENDING.value:
        return Forecast(
            Next.DELIVERY, delivery=Delivery.SENDING, channel=channel, attempt=message.attempts
        )
    if message.status == MessageStatus.UNKNOWN.value:
        # A crash left it with the provider, which cannot tell: a person decides.
        why = f"message {message.id}: {message.last_error}; `relay retry {message.id}` sends it"
        return Forecast(Next.PERSON, detail=why)
    if message.attempts == 0 and message.last_error and when is not None:
        # Kept queued by the channel (bad credentials): it says why, each try.
        return Forecast(
            Next.DELIVERY, delivery=Delivery.KEPT, channel=channel, until=when,
            detail=message.last_error,
        )  # fmt: skip
    if message.attempts > 0 and message.last_error:
        return Forecast(
            Next.DELIVERY, delivery=Delivery.RETRY, channel=channel,
            attempt=message.attempts + 1, until=when if when is not None and when > now else None,
            detail=message.last_error,
        )  # fmt: skip
    if when is not None and when > now:
        return Forecast(Next.DELIVERY, delivery=Delivery.RATE_LIMITED, channel=channel, until=when)
    return Forecast(Next.DELIVERY, delivery=Delivery.READY, channel=channel, due=True)


def _heartbeat(
    session: Session, instance: Instance | Row[Any], config: Config, now: datetime
) -> Forecast:
    due = instance.next_heartbeat_at
    if due is None:  # not expected: a heartbeat is always pending here
        return Forecast(Next.AWAIT_REPLY)
    if instance.follow_up_count >= instance.max_followups:
        return Forecast(Next.ABANDON, at=due)
    number = _number(instance)
    if due <= now:
        return Forecast(Next.FOLLOW_UP, at=due, due=True, number=number)
    opens = policy.next_window_open(session, instance, config, due)
    if opens > due:
        return Forecast(Next.FOLLOW_UP, at=due, until=opens, number=number)
    just_before = due - timedelta(seconds=1)
    at_open = policy.next_window_open(session, instance, config, just_before) > just_before
    return Forecast(Next.FOLLOW_UP, at=due, number=number, at_window_open=at_open)


def _number(instance: Instance | Row[Any]) -> str:
    return f"{instance.follow_up_count + 1}/{instance.max_followups}"
