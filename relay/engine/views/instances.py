"""Read models the API returns: frozen values with a stable JSON form (field names are
public); each is built from a mapped object or a Core row of the same table."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Row

from relay.core.clock import isoformat
from relay.core.forecasts import Forecast, describe
from relay.core.secrets import mask_optional as _masked
from relay.core.states import SUCCEEDED, values
from relay.engine.views.marks import UndeliverableMark

if TYPE_CHECKING:
    from relay.engine.views.events import EventView
    from relay.store.models import Instance, Message, Todo


@dataclass(frozen=True)
class TodoView:
    id: int
    text: str
    status: str
    answer_kind: str = "text"
    choices: tuple[str, ...] = ()
    required: bool = True
    answer: Any = None
    answer_message_id: int | None = None
    answered_at: datetime | None = None

    @classmethod
    def build(cls, todo: Todo | Row[Any]) -> TodoView:
        choices = tuple((todo.answer_spec or {}).get("choices", ()))
        return cls(
            todo.position,
            todo.text,
            todo.status,
            todo.answer_kind or "text",
            choices,
            bool(todo.required if todo.required is not None else 1),
            todo.answer,
            todo.answer_message_id,
            todo.answered_at,
        )

    @property
    def answered(self) -> bool:
        return self.answer is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "status": self.status,
            "answer_kind": self.answer_kind,
            "choices": list(self.choices),
            "required": self.required,
            "answer": self.answer,
            "answer_message_id": self.answer_message_id,
            "answered_at": isoformat(self.answered_at),
        }


@dataclass(frozen=True)
class InstanceView:
    id: str
    contact: str
    state: str
    previous_state: str | None
    objective: str
    todos: tuple[TodoView, ...]
    follow_up_count: int
    max_followups: int
    heartbeat_seconds: int
    next_heartbeat_at: datetime | None
    heartbeat_remaining_seconds: int | None
    paused_until: datetime | None
    channel: str
    agent: str
    window: str | None
    failure_reason: str | None
    end_reason: str | None
    created_at: datetime
    updated_at: datetime
    ended_at: datetime | None
    #: What comes next (None once ended); ``next_message`` words it.
    forecast: Forecast | None = None
    #: The channel ladder (relay.core.ladder), in order; ``channel`` is the rung in
    #: use. Empty: one channel.
    channels: tuple[str, ...] = ()
    subject: str | None = None
    #: Replies that arrived after the conversation ended (kept, never answered).
    late_replies: int = 0
    #: Messages a channel was already handing over when this view was taken (a
    #: pause or cancel cannot call those back; everything else of it is held).
    in_flight: int = 0
    #: Set by ``relay.engine.verbs.starting.start`` when it ran the first turn: what
    #: was said, and whether the channel took it (sent / queued / failed / blocked).
    first_message: str | None = None
    first_message_status: str | None = None
    #: What relay could not do in the first turn (a note for the operator).
    first_turn_note: str | None = None
    #: What the program that started it attached (``--meta``), unchanged.
    meta: dict[str, Any] = field(default_factory=dict)
    #: Why it is where it is: a failure or end reason, else the latest transition's
    #: reason (why it waits on a human, was paused or is queued).
    reason: str | None = None
    campaign: str | None = None
    approval: str | None = None  # first, all (None: none): see relay.engine.verbs.drafts
    drafts_pending: int = 0

    @property
    def missing_answers(self) -> tuple[int, ...]:
        """Required todos that have no answer (yet)."""
        return tuple(t.id for t in self.todos if t.required and not t.answered)

    @property
    def next_message(self) -> str | None:
        """What comes next, in words (:func:`relay.core.forecasts.describe`)."""
        return describe(self.forecast) if self.forecast else None

    @property
    def result_incomplete(self) -> bool:
        """COMPLETED although a required todo has no answer: worth a look."""
        return self.state in values(SUCCEEDED) and bool(self.missing_answers)

    @classmethod
    def build(
        cls, instance: Instance | Row[Any], contact: str, todos: list[Any], **extra: Any
    ) -> InstanceView:
        """``contact``: the contact's address; ``todos``: as :meth:`TodoView.build` takes."""
        return cls(
            id=instance.id,
            contact=contact,
            state=instance.state,
            previous_state=instance.previous_state,
            objective=instance.objective,
            todos=tuple(TodoView.build(t) for t in todos),
            follow_up_count=instance.follow_up_count,
            max_followups=instance.max_followups,
            heartbeat_seconds=instance.heartbeat_seconds,
            next_heartbeat_at=instance.next_heartbeat_at,
            heartbeat_remaining_seconds=instance.heartbeat_remaining_seconds,
            paused_until=instance.paused_until,
            channel=instance.channel,
            agent=instance.agent,
            window=instance.window,
            failure_reason=_masked(instance.failure_reason),
            end_reason=_masked(instance.end_reason),
            created_at=instance.created_at,
            updated_at=instance.updated_at,
            ended_at=instance.ended_at,
            subject=instance.subject,
            meta=dict(instance.meta or {}),
            campaign=instance.campaign,
            approval=instance.approval,
            drafts_pending=instance.drafts_pending or 0,
            channels=tuple(rung[0] for rung in getattr(instance, "ladder", None) or ()),
            **extra,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "contact": self.contact,
            "state": self.state,
            "previous_state": self.previous_state,
            "objective": self.objective,
            "todos": [t.to_json() for t in self.todos],
            "follow_up_count": self.follow_up_count,
            "max_followups": self.max_followups,
            "heartbeat_seconds": self.heartbeat_seconds,
            "next_heartbeat_at": isoformat(self.next_heartbeat_at),
            "heartbeat_remaining_seconds": self.heartbeat_remaining_seconds,
            "paused_until": isoformat(self.paused_until),
            "channel": self.channel,
            "channels": list(self.channels) or [self.channel],
            "agent": self.agent,
            "window": self.window,
            "failure_reason": self.failure_reason,
            "end_reason": self.end_reason,
            "next_message": self.next_message,
            "next": self.forecast.to_json() if self.forecast else None,
            "subject": self.subject,
            "late_replies": self.late_replies,
            "in_flight": self.in_flight,
            "meta": self.meta,
            "missing_answers": list(self.missing_answers),
            "result_incomplete": self.result_incomplete,
            "reason": self.reason,
            "campaign": self.campaign,
            "approval": self.approval or "none",
            "drafts_pending": self.drafts_pending,
            "created_at": isoformat(self.created_at),
            "updated_at": isoformat(self.updated_at),
            "ended_at": isoformat(self.ended_at),
            **self._first_turn_json(),
        }

    def _first_turn_json(self) -> dict[str, Any]:
        if self.first_message_status is None:
            return {}
        return {
            "first_message": self.first_message,
            "first_message_status": self.first_message_status,
        }


@dataclass(frozen=True)
class MessageView:
    id: int
    instance_id: str | None
    contact: str
    direction: str
    author: str
    text: str
    status: str
    channel: str | None
    attempts: int
    last_error: str | None
    created_at: datetime
    sent_at: datetime | None
    kind: str = "message"
    note: str | None = None
    delivery_status: str | None = None
    raw: str | None = None  # inbound: the message as received (a whole email), for audit
    #: Inbound: the ``[intent]`` classifier's label and the date it read (docs/channels.md).
    intent: str | None = None
    intent_date: date | None = None

    @classmethod
    def build(cls, message: Message | Row[Any], contact: str) -> MessageView:
        return cls(
            id=message.id,
            instance_id=message.instance_id,
            contact=contact,
            direction=message.direction,
            author=message.author,
            text=message.body,
            status=message.status,
            channel=message.channel,
            attempts=message.attempts,
            last_error=_masked(message.last_error),
            created_at=message.created_at,
            sent_at=message.sent_at,
            kind=message.kind or "message",
            note=message.note,
            delivery_status=message.delivery_status,
            raw=message.raw,
            intent=message.intent,
            intent_date=message.intent_date,
        )

    def to_json(self, raw: bool = False) -> dict[str, Any]:
        return {
            "id": self.id,
            "instance_id": self.instance_id,
            "contact": self.contact,
            "direction": self.direction,
            "author": self.author,
            "text": self.text,
            "status": self.status,
            "channel": self.channel,
            "attempts": self.attempts,
            "last_error": self.last_error,
            "created_at": isoformat(self.created_at),
            "sent_at": isoformat(self.sent_at),
            "kind": self.kind,
            "note": self.note,
            "delivery_status": self.delivery_status,
            "intent": self.intent,
            "intent_date": self.intent_date.isoformat() if self.intent_date else None,
            **({"raw": self.raw} if raw else {}),
        }


@dataclass(frozen=True)
class TransitionView:
    instance_id: str
    from_state: str | None
    to_state: str | None
    event: str
    actor: str
    reason: str | None
    at: datetime
    #: ``transition`` (a state change) or ``command`` (an operator command, audited).
    kind: str = "transition"
    args: dict[str, Any] | None = None

    @classmethod
    def command(cls, event: EventView) -> TransitionView:
        """An audited operator command, as a row of ``relay history``."""
        return cls(
            event.instance_id or "",
            None,
            None,
            str(event.data.get("command")),
            event.actor or "?",
            None,
            event.at,
            "command",
            dict(event.data.get("args") or {}),
        )

    @classmethod
    def build(cls, row: Row[Any]) -> TransitionView:
        return cls(
            row.instance_id,
            row.from_state,
            row.to_state,
            row.event,
            row.actor,
            _masked(row.reason),
            row.created_at,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "instance_id": self.instance_id,
            "from_state": self.from_state,
            "to_state": self.to_state,
            "event": self.event,
            "actor": self.actor,
            "reason": self.reason,
            "at": isoformat(self.at),
            "kind": self.kind,
            "args": self.args,
        }


@dataclass(frozen=True)
class ContactView:
    address: str
    kind: str
    timezone: str | None
    opted_out_at: datetime | None
    live_instance: str | None
    queued: tuple[str, ...]
    unrouted: tuple[MessageView, ...] = ()
    fields: dict[str, Any] = field(default_factory=dict)
    #: After an opt-out: messages to the contact handed to a provider from its
    #: commit on (:mod:`relay.engine.contacts.settling`); they may still arrive.
    in_flight: int = 0
    undeliverable: UndeliverableMark | None = None
    #: Every address of the contact by kind, its own among them.
    addresses: dict[str, str] = field(default_factory=dict)
    #: The kinds of address the contact opted out of alone, and when
    #: (``[compliance] optout_scope = "channel"``).
    opted_out_kinds: dict[str, datetime] = field(default_factory=dict)
    #: Where and when the contact consented, as given, and when relay recorded it.
    consent: str | None = None
    consent_at: datetime | None = None
    #: The legal hours that hold proactive messages to it, and why (None: none).
    legal_hours: str | None = None

    def to_json(self) -> dict[str, Any]:
        mark = self.undeliverable
        return {
            "contact": self.address,
            "kind": self.kind,
            "addresses": self.addresses or {self.kind: self.address},
            "timezone": self.timezone,
            "fields": self.fields,
            "consent": self.consent,
            "consent_at": isoformat(self.consent_at),
            "legal_hours": self.legal_hours,
            "opted_out": self.opted_out_at is not None,
            "opted_out_at": isoformat(self.opted_out_at),
            "opted_out_kinds": {k: isoformat(at) for k, at in sorted(self.opted_out_kinds.items())},
            "undeliverable": mark is not None,
            "undeliverable_at": isoformat(mark.at) if mark else None,
            "undeliverable_reason": mark.reason if mark else None,
            "bounce": mark.bounce_json() if mark else None,
            "live_instance": self.live_instance,
            "queued": list(self.queued),
            "unrouted": [m.to_json() for m in self.unrouted],
            "in_flight": self.in_flight,
        }
