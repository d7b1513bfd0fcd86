"""Drafts a person approves: the operator's side of ``[agent] approval``.

A conversation started with approval ``first`` or ``all`` has its agent's
messages written as drafts (:func:`relay.store.outbox.as_draft`): outbox
rows the dispatcher never sees. The conversation moves on as after any turn
(it waits for the reply), but its follow-up countdown does not run while a
draft waits (:func:`relay.engine.conversation.transitions._move_heartbeat` keeps it whole,
as a pause keeps what is left): nothing went out yet, so no silence counts.
That keeps the heartbeat invariant (pending only in WAITING_FOR_REPLY) without
a state of its own; see docs/programs.md for why.

- :func:`approve` queues the draft (or, edited, a copy with the new text: the
  transcript is append-only, so the draft stays as written, status ``edited``).
  From there it is any queued message: the delivery gate holds or drops it for
  a pause, an opt-out, a cancel or the sending window exactly as it would any
  other. The countdown starts when the last draft is approved.
- :func:`reject` discards it (status ``rejected``) with a reason the agent's
  next turn reads in its state (:data:`REJECTED_KEY`); a conversation waiting
  for the reply gets that turn at once (``draft_rejected``: back to ACTIVE), so
  the agent writes a new draft.

Each is one transaction under the conversation's row lock, the lock a cancel,
a pause and an opt-out take too: whichever commits first, the other sees it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from relay.core.approval import after_approval
from relay.core.clock import isoformat
from relay.core.errors import InvalidInput, NotFound, Refused
from relay.core.states import HEARTBEAT_STATE, TRANSITIONS, Event, State
from relay.core.values import Author, EventKind, MessageStatus
from relay.engine.conversation import audit, transitions
from relay.engine.turns.commit import REJECTED_KEY, store_state
from relay.engine.views.instances import MessageView
from relay.store import contacts, draft_rows, instances
from relay.store.outbox import queue_outbound

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from relay.engine.runtime import Runtime
    from relay.store.models import Instance, Message


@dataclass(frozen=True)
class DraftView:
    """A draft awaiting approval, and how long it has waited."""

    id: int
    instance_id: str
    contact: str
    channel: str | None
    text: str
    state: str
    created_at: datetime
    waited_seconds: float
    meta: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "instance_id": self.instance_id,
            "contact": self.contact,
            "channel": self.channel,
            "text": self.text,
            "state": self.state,
            "created_at": isoformat(self.created_at),
            "waited_seconds": round(self.waited_seconds, 3),
            "meta": self.meta,
        }


def pending(relay: Runtime, instance_id: str | None = None) -> list[DraftView]:
    """The drafts awaiting approval, oldest first (``instance_id``: one conversation's)."""
    with relay.store.read_transaction() as session:
        iid = instances.resolve(session, instance_id).id if instance_id else None
        rows = draft_rows.pending(session, iid)
    now = relay.now()
    return [
        DraftView(
            id=row.id,
            instance_id=row.instance_id,
            contact=row.address,
            channel=row.channel,
            text=row.body,
            state=row.state,
            created_at=row.created_at,
            waited_seconds=max(0.0, (now - row.created_at).total_seconds()),
            meta=row.meta,
        )
        for row in rows
    ]


def approve(relay: Runtime, message_id: int, *, actor: str, text: str | None = None) -> MessageView:
    """Send the draft (``text``: send this instead; the draft is kept as written and
    the edit recorded). Returns the message that goes out, queued."""
    from relay.engine.verbs.new_conversation import clean_text

    body = clean_text(text, "text") if text is not None else None
    with relay.store.transaction() as session:
        instance, draft = _locked_draft(session, message_id)
        now = relay.now()
        edited = body is not None and body != draft.body
        if edited:
            assert body is not None
            draft.status = MessageStatus.EDITED.value
            out = queue_outbound(
                session, instance, body, Author.AGENT, now, proactive=bool(draft.proactive)
            )
            out.note = f"edited from draft {draft.id} by {actor}"
            draft.note = f"edited by {actor} before approval; sent as message {out.id}"
        else:
            out = draft
            out.status = MessageStatus.QUEUED.value
            out.next_attempt_at = now
        transitions.record_queued(session, out, now)
        data = {"message_id": draft.id, "action": "approved", "sent_as": out.id, "edited": edited}
        transitions.record(session, EventKind.DRAFT, instance.id, data, now, actor=actor)
        args = {"message_id": draft.id, "sent_as": out.id, "edited": edited}
        audit.record(session, "approve", instance.id, args, now, actor=actor)
        instance.approval = after_approval(instance.approval)
        _one_less(instance, out.created_at)
        return MessageView.build(out, contacts.address_of(session, instance.contact_id))


def reject(relay: Runtime, message_id: int, *, actor: str, reason: str) -> MessageView:
    """Discard the draft; the agent's next turn reads ``reason`` and writes anew."""
    from relay.engine.verbs.new_conversation import clean_text

    why = clean_text(reason, "reason")
    with relay.store.transaction() as session:
        instance, draft = _locked_draft(session, message_id)
        now = relay.now()
        draft.status = MessageStatus.REJECTED.value
        draft.note = f"rejected by {actor}: {why}"
        rejected = {"message_id": draft.id, "text": draft.body, "reason": why}
        store_state(session, instance, REJECTED_KEY, rejected, now)
        data = {"message_id": draft.id, "action": "rejected", "reason": why}
        transitions.record(session, EventKind.DRAFT, instance.id, data, now, actor=actor)
        audit.record(session, "reject", instance.id, {"message_id": draft.id}, now, actor=actor)
        _one_less(instance, None)
        if (
            Event.DRAFT_REJECTED in TRANSITIONS[State(instance.state)]
            and not instance.drafts_pending
        ):
            transitions.apply_event(
                session, instance, Event.DRAFT_REJECTED, now=now, actor=actor, reason=why
            )
            # The countdown kept for the rejected draft is not this turn's.
            instance.heartbeat_remaining_seconds = None
        return MessageView.build(draft, contacts.address_of(session, instance.contact_id))


def _locked_draft(session: Session, message_id: int) -> tuple[Instance, Message]:
    """The draft and its conversation, the conversation's row locked first (the order
    every command that changes a conversation takes), then read again."""
    if not isinstance(message_id, int) or isinstance(message_id, bool) or message_id < 1:
        raise InvalidInput(f"a message id is a positive whole number, not {message_id!r}")
    instance_id = draft_rows.instance_of(session, message_id)
    if instance_id is None:
        raise NotFound(f"no message {message_id}")
    instance = instances.resolve(session, instance_id, lock=True)
    draft = draft_rows.message(session, message_id)
    assert draft is not None
    session.refresh(draft)
    if draft.status != MessageStatus.DRAFT.value:
        raise Refused(
            f"message {message_id} is {draft.status}, not a draft awaiting approval"
            + (" (its conversation ended or its contact opted out)" if _withdrawn(draft) else "")
        )
    return instance, draft


def _withdrawn(draft: Message) -> bool:
    return draft.status in (MessageStatus.CANCELLED.value, MessageStatus.BLOCKED.value)


def _one_less(instance: Instance, written: datetime | None) -> None:
    """One draft fewer; with none left the follow-up countdown starts, with the time
    it kept (in WAITING_FOR_REPLY; a paused conversation starts it on resume).

    It counts from ``written``, when the message that goes out was written, as
    for any message: delivery moves the countdown on by however long the message
    waited before it went (:meth:`OutboxScreen.move_heartbeats`), so the contact
    has the whole silence from the moment it reaches them. A rejection passes
    None: nothing went out."""
    instance.drafts_pending = max(0, (instance.drafts_pending or 0) - 1)
    if instance.drafts_pending or State(instance.state) is not HEARTBEAT_STATE:
        return
    if written is None:
        return
    seconds = instance.heartbeat_remaining_seconds
    if seconds is None:
        seconds = instance.heartbeat_seconds
    instance.next_heartbeat_at = written + timedelta(seconds=seconds)
    instance.heartbeat_remaining_seconds = None
    instance.version += 1
