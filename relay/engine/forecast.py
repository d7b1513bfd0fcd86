"""What an instance will send next, when, and why it waits (``relay show``'s "next message").

Read from the store only, the way the daemon will decide: an undelivered
outbox row first (held by a rate limit, waiting for a retry, or ready), then
the turn or heartbeat the instance's state makes due, with the sending window
applied to proactive messages.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from relay.config import Config
from relay.core.clock import isoformat
from relay.core.durations import format_duration
from relay.core.states import State
from relay.core.values import MessageStatus
from relay.engine import policy
from relay.store import queries, reads
from relay.store.models import Instance, Message

RUNNER = "the daemon or `relay tick` runs it"


def next_message(session: Session, instance: Instance, config: Config, now: datetime) -> str | None:
    """One line for people; None once the conversation has ended."""
    state = State(instance.state)
    if state.terminal:
        return None
    pending = reads.next_outbound(session, instance.id)
    if pending is not None:
        return _delivery(pending, now)
    if state is State.WAITING_FOR_REPLY:
        return _heartbeat(session, instance, config, now)
    return _due(instance, state, now) or _held(session, instance, state)


def _due(instance: Instance, state: State, now: datetime) -> str | None:
    """What the runner does next where a turn is due; None in the other states."""
    if state is State.CREATED:
        if instance.not_before is not None and instance.not_before > now:
            return f"first message held for the sending window until {_at(instance.not_before)}"
        return f"first message due now ({RUNNER})"
    if state is State.HEARTBEAT_SCHEDULED:
        return f"follow-up {_number(instance)} due now ({RUNNER})"
    if state in (State.ACTIVE, State.WAITING_FOR_AGENT):
        return f"reply due now ({RUNNER})"
    return None


def _held(session: Session, instance: Instance, state: State) -> str:
    """What a conversation that no turn serves waits for: its turn in the queue, a
    resume, or a person."""
    if state is State.QUEUED:
        holder = queries.slot_holder(session, instance.contact_id)
        behind = f" {holder.id}" if holder is not None else ""
        return f"waits until the contact's live conversation{behind} ends"
    if state is State.PAUSED:
        return _paused(instance)
    # Why it went to a person (a WhatsApp template missing, a refusal).
    why = queries.latest_reasons(session, [instance.id]).get(instance.id)
    return "waits for a person: `relay send` or `relay resume`" + (f" ({why})" if why else "")


def _delivery(message: Message, now: datetime) -> str:
    channel = message.channel or "console"
    when = message.next_attempt_at
    if message.status == MessageStatus.SENDING.value:
        return f"being delivered on {channel} (attempt {message.attempts})"
    if message.attempts == 0 and message.last_error and when is not None:
        # Kept queued by the channel (bad credentials): it says why, each try.
        return f"kept queued: {message.last_error} (next try at {_at(when)})"
    if message.attempts > 0 and message.last_error:
        retry = f"retry at {_at(when)}" if when is not None and when > now else "retry now"
        return f"waiting for delivery (attempt {message.attempts + 1}, {retry})"
    if when is not None and when > now:
        return f"held by the rate limit of channel {channel} until {_at(when)}"
    return f"queued for delivery on {channel} now ({RUNNER})"


def _heartbeat(session: Session, instance: Instance, config: Config, now: datetime) -> str:
    due = instance.next_heartbeat_at
    if due is None:  # not expected: a heartbeat is always pending here
        return "waits for the contact's reply"
    if instance.follow_up_count >= instance.max_followups:
        return f"none: abandons at {_at(due)} unless the contact replies"
    what = f"follow-up {_number(instance)}"
    if due <= now:
        return f"{what} due since {_at(due)} ({RUNNER})"
    opens = policy.next_window_open(session, instance, config, due)
    if opens > due:
        return f"{what} due {_at(due)}, held for the sending window until {_at(opens)}"
    just_before = due - timedelta(seconds=1)
    if policy.next_window_open(session, instance, config, just_before) > just_before:
        return f"{what} at {_at(due)}, when the sending window opens"
    return f"{what} at {_at(due)}"


def _paused(instance: Instance) -> str:
    left = instance.heartbeat_remaining_seconds
    then = (
        f"; the follow-up countdown resumes with {format_duration(timedelta(seconds=left))} left"
        if left is not None
        else ""
    )
    if instance.paused_until is not None:
        return f"paused until {_at(instance.paused_until)} (snooze){then}"
    return f"paused: nothing is sent until `relay resume`{then}"


def _number(instance: Instance) -> str:
    return f"{instance.follow_up_count + 1}/{instance.max_followups}"


def _at(moment: datetime | None) -> str:
    if moment is None:
        return "-"
    return isoformat(moment.replace(microsecond=0)) or "-"
