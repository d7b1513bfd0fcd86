"""What a program or an operator reads besides a conversation itself: the event log,
results, the contact list, the inbox, the funnel and the live view."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Row

from relay.core.clock import isoformat
from relay.core.forecasts import Forecast
from relay.core.states import ENDED, SUCCEEDED, values
from relay.engine.views.instances import MessageView, TodoView

if TYPE_CHECKING:
    from relay.store.models import Instance


@dataclass(frozen=True)
class ResultTodo:
    todo: TodoView
    #: The contact's message the answer came from (id, text, time), if known.
    message: MessageView | None = None

    def to_json(self) -> dict[str, Any]:
        message = None
        if self.message is not None:
            message = {
                "id": self.message.id,
                "text": self.message.text,
                "at": isoformat(self.message.created_at),
            }
        return {**self.todo.to_json(), "message": message}


@dataclass(frozen=True)
class ResultView:
    """What a conversation found out: each todo's status and answer. Final once the
    conversation has ended (nothing changes a terminal instance's todos)."""

    id: str
    contact: str
    state: str
    todos: tuple[ResultTodo, ...]
    meta: dict[str, Any]
    ended_at: datetime | None
    schema_errors: tuple[str, ...] = ()

    @property
    def final(self) -> bool:
        return self.state in values(ENDED)

    @property
    def answers(self) -> dict[str, Any]:
        return {str(t.todo.id): t.todo.answer for t in self.todos if t.todo.answered}

    @property
    def missing_answers(self) -> tuple[int, ...]:
        return tuple(t.todo.id for t in self.todos if t.todo.required and not t.todo.answered)

    @property
    def complete(self) -> bool:
        return not self.missing_answers and not self.schema_errors

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "contact": self.contact,
            "state": self.state,
            "final": self.final,
            "complete": self.complete,
            "result_incomplete": self.state in values(SUCCEEDED) and not self.complete,
            "answers": self.answers,
            "missing_answers": list(self.missing_answers),
            "schema_errors": list(self.schema_errors),
            "todos": [t.to_json() for t in self.todos],
            "meta": self.meta,
            "ended_at": isoformat(self.ended_at),
        }


def why(instance: Instance | Row[Any], latest_reason: str | None) -> str | None:
    """The reason shown with an instance's state (see :attr:`InstanceView.reason`)."""
    if instance.failure_reason == "cancelled" and latest_reason:
        return f"cancelled: {latest_reason}"
    if instance.failure_reason:
        return instance.failure_reason
    return latest_reason or instance.end_reason


def contact_name(fields: Mapping[str, Any] | None) -> str | None:
    """The contact's name from what an import told about it: a ``name`` column, or
    first and last name columns (any case, spaces for underscores), else None.
    ``relay watch``, ``relay contact list`` and the web console all show this one."""
    if not fields:
        return None
    lowered = {str(k).lower().replace(" ", "_"): v for k, v in fields.items() if v}
    if lowered.get("name"):
        return str(lowered["name"])
    parts = [str(lowered[k]) for k in ("first_name", "last_name") if lowered.get(k)]
    return " ".join(parts) or None


@dataclass(frozen=True)
class ContactRow:
    """One line of ``relay contact list``."""

    address: str
    kind: str
    name: str | None
    timezone: str | None
    fields: dict[str, Any]
    opted_out_at: datetime | None
    undeliverable_at: datetime | None
    live_instance: str | None
    queued: int
    conversations: int
    created_at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "contact": self.address,
            "kind": self.kind,
            "name": self.name,
            "timezone": self.timezone,
            "fields": self.fields,
            "opted_out": self.opted_out_at is not None,
            "undeliverable": self.undeliverable_at is not None,
            "live_instance": self.live_instance,
            "queued": self.queued,
            "conversations": self.conversations,
            "created_at": isoformat(self.created_at),
        }


@dataclass(frozen=True)
class InboxItem:
    """Inbound no conversation took: ``unrouted`` (no conversation matched),
    ``late`` (its conversation had ended) or ``rejected`` (no usable sender)."""

    kind: str
    id: int
    at: datetime
    channel: str | None
    sender: str
    text: str
    instance_id: str | None = None
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "id": self.id,
            "at": isoformat(self.at),
            "channel": self.channel,
            "sender": self.sender,
            "text": self.text,
            "instance_id": self.instance_id,
            "note": self.note,
        }


@dataclass(frozen=True)
class StatsView:
    """``relay stats``: the funnel of the chosen conversations."""

    campaign: str | None
    since: datetime | None
    started: int
    delivered: int
    replied: int
    outcomes: dict[str, int]
    median_first_reply_seconds: float | None
    followups: int
    failed_deliveries: tuple[tuple[str, int], ...]
    #: Replies by the ``[intent]`` classifier's label, every label (0 when off).
    intents: dict[str, int] = field(default_factory=dict)

    @property
    def reply_rate(self) -> float | None:
        """Replies per conversation whose first message was delivered."""
        return self.replied / self.delivered if self.delivered else None

    @property
    def followups_per_reply(self) -> float | None:
        return self.followups / self.replied if self.replied else None

    def to_json(self) -> dict[str, Any]:
        return {
            "campaign": self.campaign,
            "since": isoformat(self.since),
            "started": self.started,
            "delivered": self.delivered,
            "replied": self.replied,
            "outcomes": self.outcomes,
            "reply_rate": self.reply_rate,
            "median_first_reply_seconds": self.median_first_reply_seconds,
            "followups": self.followups,
            "followups_per_reply": self.followups_per_reply,
            "failed_deliveries": [
                {"reason": reason, "count": count} for reason, count in self.failed_deliveries
            ],
            "intents": self.intents,
        }


@dataclass(frozen=True)
class WatchRow:
    """One line of ``relay watch``."""

    id: str
    contact: str
    state: str
    previous_state: str | None
    objective: str
    campaign: str | None
    updated_at: datetime
    next_heartbeat_at: datetime | None
    queue_depth: int
    last_message: str | None = None
    last_direction: str | None = None
    last_message_at: datetime | None = None
    contact_name: str | None = None
    #: What comes next, read from the row alone
    #: (:func:`relay.engine.conversation.forecast.at_a_glance`).
    next: Forecast | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "contact": self.contact,
            "contact_name": self.contact_name,
            "state": self.state,
            "previous_state": self.previous_state,
            "objective": self.objective,
            "campaign": self.campaign,
            "updated_at": isoformat(self.updated_at),
            "next_heartbeat_at": isoformat(self.next_heartbeat_at),
            "queue_depth": self.queue_depth,
            "last_message": self.last_message,
            "last_direction": self.last_direction,
            "last_message_at": isoformat(self.last_message_at),
            "next": self.next.to_json() if self.next else None,
        }
