"""An outbox row's life: written (:func:`queue_outbound`, a draft, a cancel), and
what becomes of its delivery when it does not simply go, with the count of
every outcome.

A message the screen rules out is held, blocked, cancelled or failed
(:func:`relay.engine.outbox.screen.rule_out`); one the channel did not take is
retried with backoff, held (the provider cannot send at all), blocked (the
recipient opted out with it), or failed for good and handed to a person
(:func:`record`). Kept apart from the dispatcher's happy path
(:mod:`relay.engine.outbox.dispatcher`); each runs in the transaction that holds
the locked outbox row.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from sqlalchemy.orm import Session

from relay.channels.base import ChannelError
from relay.core.errors import RelayError
from relay.core.secrets import mask_text
from relay.core.values import Author, Direction, EventKind, MessageStatus
from relay.engine.contacts import optouts
from relay.engine.conversation import fallback, transitions
from relay.store import claims, locked_rows
from relay.store import outbox as outbox_rows
from relay.store.locked_rows import InstanceFields
from relay.store.models import Contact, Message

log = logging.getLogger("relay.outbox")

_T = TypeVar("_T")


def queue_outbound(
    session: Session,
    instance: InstanceFields,
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
    instance: InstanceFields, body: str, author: Author, now: datetime, *, proactive: bool = False
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
        # 128 random bits as hex: what uuid4().hex gave, without building a UUID
        # (a few microseconds a message on the daemon's hot path).
        "idempotency_key": secrets.token_hex(16),
        "attempts": 0,
        "next_attempt_at": now,
        # Set when the committing worker leases the row at once (Dispatcher.lease_new).
        "lease_owner": None,
        "proactive": int(proactive),
        "created_at": now,
    }


#: Where the agent's next turn finds the draft a person rejected and why (its
#: ``state``): ``{"message_id": ..., "text": ..., "reason": ...}``; cleared by that turn.
REJECTED_KEY = "relay:rejected_draft"


def as_draft(row: dict[str, Any]) -> dict[str, Any]:
    """An outbox row that waits for a person's approval: the dispatcher never sees it."""
    row["status"] = MessageStatus.DRAFT.value
    row["next_attempt_at"] = None
    return row


def cancel_outbox(session: Session, instance_id: str) -> None:
    """A cancelled conversation sends nothing more, not even what was queued."""
    for message in outbox_rows.queued_of(session, instance_id):
        message.status = MessageStatus.CANCELLED.value
        message.next_attempt_at = None


@dataclass
class DeliveryReport:
    sent: int = 0
    retried: int = 0
    failed: int = 0
    blocked: int = 0
    held: int = 0
    cancelled: int = 0

    def add(self, other: DeliveryReport) -> None:
        self.sent += other.sent
        self.retried += other.retried
        self.failed += other.failed
        self.blocked += other.blocked
        self.held += other.held
        self.cancelled += other.cancelled


@dataclass(frozen=True)
class Failure:
    """Why a send failed, and what the channel advises (see ``ChannelError``)."""

    error: str
    transient: bool
    retry_after: float | None = None
    hold: bool = False
    opted_out: bool = False


@dataclass(frozen=True)
class Retries:
    """How often, and how far apart, a transient failure is tried again."""

    backoff: timedelta
    max_attempts: int


def attempt(call: Callable[[], _T]) -> tuple[_T | None, Failure | None]:
    """Call a channel: (result, None) on success, (None, failure) on failure. A
    channel error says whether a retry may help (and when, and whether to keep
    the message queued); any other relay error will not; an unexpected exception
    (a bug, a dropped connection) might."""
    # The error is stored (last error, transition reason) and printed by show,
    # history and transcript: a secret in a URL or a header it quotes is masked.
    try:
        return call(), None
    except ChannelError as exc:
        error = mask_text(str(exc.message))
        advice = Failure(error, exc.transient, exc.retry_after, exc.hold, exc.opted_out)
        return None, advice
    except RelayError as exc:
        return None, Failure(mask_text(exc.message), False)
    except Exception as exc:
        return None, Failure(mask_text(f"{type(exc).__name__}: {exc}"), True)


def record(
    session: Session,
    message: Message,
    failure: Failure,
    now: datetime,
    report: DeliveryReport,
    retries: Retries,
) -> None:
    """Record a failed attempt on the locked ``message`` (still ours: the caller checked)."""
    message.last_error = failure.error
    if failure.opted_out or failure.hold:
        _refused(session, message, failure, now, report, retries)
    elif failure.transient and message.attempts < retries.max_attempts:
        _retry(message, failure, now, report, retries)
    else:
        _give_up(session, message, failure.error, now, report)


def _retry(
    message: Message, failure: Failure, now: datetime, report: DeliveryReport, retries: Retries
) -> None:
    delay = max(
        retries.backoff * (2 ** (message.attempts - 1)),
        timedelta(seconds=failure.retry_after or 0),
    )
    message.status = MessageStatus.QUEUED.value
    message.next_attempt_at = now + delay
    report.retried += 1
    log.warning(
        "message %s attempt %s failed (%s); retry in %ss",
        message.id,
        message.attempts,
        failure.error,
        int(delay.total_seconds()),
        extra={"instance_id": message.instance_id},
    )


def _give_up(
    session: Session, message: Message, error: str, now: datetime, report: DeliveryReport
) -> None:
    message.status = MessageStatus.FAILED.value
    message.next_attempt_at = None
    report.failed += 1
    data = {"message_id": message.id, "error": error, "attempts": message.attempts}
    transitions.record(session, EventKind.FAILED, message.instance_id, data, now)
    log.error(
        "message %s failed after %s attempt(s): %s",
        message.id,
        message.attempts,
        error,
        extra={"instance_id": message.instance_id},
    )
    _escalate(session, message, error, now)


def _refused(
    session: Session,
    message: Message,
    failure: Failure,
    now: datetime,
    report: DeliveryReport,
    retries: Retries,
) -> None:
    """The provider refused for a reason that is not the message's: the
    recipient opted out with it (the contact is opted out, as by a STOP), or
    the channel cannot send at all (bad credentials: the message waits,
    queued, without using up an attempt, until a person fixes it)."""
    if failure.opted_out:
        person = session.get(Contact, message.contact_id)
        assert person is not None
        optouts.opt_out(session, person, now, reason=f"provider: {failure.error}")
        message.status = MessageStatus.BLOCKED.value
        message.next_attempt_at = None
        report.blocked += 1
        log.warning("message %s: contact opted out (%s)", message.id, failure.error)
        return
    wait = max(retries.backoff, timedelta(seconds=failure.retry_after or 0))
    claims.unlease_outbox_row(message, now + wait)
    report.held += 1
    log.error("message %s stays queued: %s", message.id, failure.error)


def _escalate(session: Session, message: Message, error: str, now: datetime) -> None:
    """A message that cannot be delivered needs a person (or the next channel)."""
    if message.instance_id is None:
        return
    instance = claims.lock_instance(session, message.instance_id)
    if instance is None:
        return
    reason = f"delivery of message {message.id} failed: {error}"
    # With a channel ladder, the message goes again on the next channel instead.
    if not fallback.after_failure(session, instance, message, reason, now, "dispatcher"):
        transitions.hand_to_human(session, instance, reason, now=now, actor="dispatcher")


def put_back(
    session: Session, message_ids: Sequence[int], attempts: Mapping[int, int], now: datetime
) -> int:
    """Return claimed messages unsent to the outbox, due now, their attempt not
    counted; how many. They were behind a message of their conversation that
    failed in the same batch, or that another worker took over: they go after it
    (a claim takes no message while an earlier one of its conversation is backing
    off or being sent). A row another worker has taken over meanwhile (its attempt
    differs) is left to it."""
    locked = claims.lock_messages(session, list(message_ids))
    ours = [row for row in locked.values() if claims.still_leased(row, attempts[row.id])]
    for row in ours:
        claims.unlease_outbox_row(row, now)
    locked_rows.write(session, ours)
    return len(ours)
