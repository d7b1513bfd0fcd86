"""The ORM's classes, mapped onto the Core tables of :mod:`relay.store.tables`.

The schema is defined there, once; each class here names its table and
annotates its columns' Python types for the type checker
(``tests/unit/test_models.py`` checks that the annotations name every column
and agree with its nullability). Commands that change conversations use these
classes; the cold read commands (``list``, ``status``, ``show``) read the tables
with Core and never load this module.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, cast

from sqlalchemy import Table
from sqlalchemy.orm import DeclarativeBase, Mapped

from relay.store import tables


class Base(DeclarativeBase):
    metadata = tables.metadata


class Contact(Base):
    __table__ = tables.contacts

    id: Mapped[int]
    address: Mapped[str]
    kind: Mapped[str]
    timezone: Mapped[str | None]
    opted_out_at: Mapped[datetime | None]
    opt_out_reason: Mapped[str | None]
    undeliverable_at: Mapped[datetime | None]
    undeliverable_reason: Mapped[str | None]
    bounce_reason: Mapped[str | None]
    undeliverable_message_id: Mapped[int | None]
    last_inbound_at: Mapped[datetime | None]
    fields: Mapped[dict[str, Any] | None]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    consent: Mapped[str | None]
    consent_at: Mapped[datetime | None]


class Instance(Base):
    __table__ = tables.instances

    seq: Mapped[int]
    id: Mapped[str]
    contact_id: Mapped[int]
    contact_slot: Mapped[int | None]
    state: Mapped[str]
    previous_state: Mapped[str | None]
    objective: Mapped[str]
    subject: Mapped[str | None]
    channel: Mapped[str]
    agent: Mapped[str]
    window: Mapped[str | None]
    heartbeat_seconds: Mapped[int]
    max_followups: Mapped[int]
    follow_up_count: Mapped[int]
    next_heartbeat_at: Mapped[datetime | None]
    heartbeat_remaining_seconds: Mapped[int | None]
    heartbeat_override_seconds: Mapped[int | None]
    paused_until: Mapped[datetime | None]
    not_before: Mapped[datetime | None]
    failure_reason: Mapped[str | None]
    end_reason: Mapped[str | None]
    version: Mapped[int]
    lease_owner: Mapped[str | None]
    lease_expires_at: Mapped[datetime | None]
    turn_attempts: Mapped[int]
    meta: Mapped[dict[str, Any] | None]
    result_schema: Mapped[dict[str, Any] | None]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    ended_at: Mapped[datetime | None]
    campaign: Mapped[str | None]
    import_key: Mapped[str | None]
    template: Mapped[dict[str, Any] | None]
    outcome: Mapped[str | None]
    first_delivered_at: Mapped[datetime | None]
    first_reply_at: Mapped[datetime | None]
    reply_seconds: Mapped[float | None]
    followups_sent: Mapped[int]
    approval: Mapped[str | None]
    drafts_pending: Mapped[int]
    ladder: Mapped[list[Any] | None]
    fallback_seconds: Mapped[int | None]


class Todo(Base):
    __table__ = tables.todos

    instance_id: Mapped[str]
    position: Mapped[int]
    text: Mapped[str]
    status: Mapped[str]
    updated_at: Mapped[datetime]
    answer_kind: Mapped[str]
    answer_spec: Mapped[dict[str, Any] | None]
    required: Mapped[int]
    answer: Mapped[Any]
    answer_message_id: Mapped[int | None]
    answered_at: Mapped[datetime | None]


class Message(Base):
    __table__ = tables.messages

    id: Mapped[int]
    instance_id: Mapped[str | None]
    contact_id: Mapped[int]
    direction: Mapped[str]
    author: Mapped[str]
    body: Mapped[str]
    status: Mapped[str]
    channel: Mapped[str | None]
    kind: Mapped[str]
    refs: Mapped[str | None]
    raw: Mapped[str | None]
    note: Mapped[str | None]
    delivery_status: Mapped[str | None]
    delivery_updated_at: Mapped[datetime | None]
    idempotency_key: Mapped[str | None]
    provider_message_id: Mapped[str | None]
    attempts: Mapped[int]
    next_attempt_at: Mapped[datetime | None]
    lease_owner: Mapped[str | None]
    proactive: Mapped[int]
    last_error: Mapped[str | None]
    bounce_reason: Mapped[str | None]
    intent: Mapped[str | None]
    intent_date: Mapped[date | None]
    created_at: Mapped[datetime]
    sent_at: Mapped[datetime | None]
    processed_at: Mapped[datetime | None]


class EventRow(Base):
    __table__ = tables.events

    id: Mapped[int]
    kind: Mapped[str]
    instance_id: Mapped[str | None]
    actor: Mapped[str | None]
    data: Mapped[dict[str, Any] | None]
    created_at: Mapped[datetime]
    from_state: Mapped[str | None]
    to_state: Mapped[str | None]
    event: Mapped[str | None]
    reason: Mapped[str | None]


class StateEntry(Base):
    __table__ = tables.state_entries

    id: Mapped[int]
    scope: Mapped[str]
    scope_id: Mapped[str]
    key: Mapped[str]
    value: Mapped[Any]
    updated_at: Mapped[datetime]


class ChannelCursor(Base):
    __table__ = tables.channel_cursors

    channel: Mapped[str]
    position: Mapped[str]
    updated_at: Mapped[datetime]


class ContactAlias(Base):
    __table__ = tables.contact_aliases

    contact_id: Mapped[int]
    channel: Mapped[str]
    address: Mapped[str]
    created_at: Mapped[datetime]


class ContactAddress(Base):
    __table__ = tables.contact_addresses

    contact_id: Mapped[int]
    kind: Mapped[str]
    address: Mapped[str]
    created_at: Mapped[datetime]
    opted_out_at: Mapped[datetime | None]
    opt_out_reason: Mapped[str | None]


class SendSlot(Base):
    __table__ = tables.send_slots

    channel: Mapped[str]
    sender: Mapped[str]
    free_at_us: Mapped[int]


class Push(Base):
    """Mapped for completeness; written by ``relay serve``'s writer and read by
    the daemon's intake below the ORM (:mod:`relay.store.pushes`)."""

    __table__ = tables.pushes

    id: Mapped[int]
    channel: Mapped[str]
    incoming: Mapped[str]
    received_at: Mapped[datetime]


class InboundReject(Base):
    __table__ = tables.inbound_rejects

    id: Mapped[int]
    channel: Mapped[str]
    sender: Mapped[str]
    body: Mapped[str]
    provider_message_id: Mapped[str | None]
    error: Mapped[str]
    created_at: Mapped[datetime]


class Erasure(Base):
    __table__ = tables.erasures

    address_hash: Mapped[str]
    key_id: Mapped[str]
    erased_at: Mapped[datetime]


class Daemon(Base):
    __table__ = tables.daemons

    id: Mapped[str]
    host: Mapped[str]
    pid: Mapped[int]
    started_at: Mapped[datetime]
    last_pulse_at: Mapped[datetime | None]
    stopped_at: Mapped[datetime | None]


def table_of(model: type[Base]) -> Table:
    """A model's table, for Core statements (bulk inserts of plain dicts)."""
    return cast(Table, model.__table__)
