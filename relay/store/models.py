"""SQLAlchemy 2 models: the instance store's tables.

Every schema change here needs an Alembic revision under ``migrations/``; a
test compares the schema the migrations build with these models.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# Referenced by name when a unique violation becomes a domain error.
CONTACT_SLOT_INDEX = "uq_instances_contact_slot"
IMPORT_KEY_INDEX = "uq_instances_import_key"
# Named by the funnel's queries (an index hint on SQLite) and by migration 0006.
FUNNEL_INDEX = "ix_instances_funnel"
FUNNEL_COLUMNS = (
    "campaign", "outcome", "created_at", "first_delivered_at", "first_reply_at", "followups_sent"
)  # fmt: skip
# The median's ordered ranges (replied conversations are past the NULLs), for
# all conversations and for one campaign.
REPLY_INDEXES = {
    "ix_instances_reply_seconds": ("reply_seconds", "created_at"),
    "ix_instances_campaign_reply_seconds": ("campaign", "reply_seconds", "created_at"),
}


def _utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("naive datetime given to the store; use timezone-aware UTC")
    return value.astimezone(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC in Python on every backend (SQLite keeps no zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = _utc(value)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)

    # SQLite: one function each way, not this type's step chained to DateTime's
    # (about 16 binds and 36 reads a follow-up); a UTC time's isoformat less its
    # "+00:00" (no replace() copy) is DateTime's text: stored values are unchanged.

    def bind_processor(self, dialect: Dialect) -> Any:
        if dialect.name != "sqlite":
            return super().bind_processor(dialect)

        def to_text(value: datetime | None) -> str | None:
            if value is None:
                return None
            utc = value if value.tzinfo is UTC else _utc(value)
            return utc.isoformat(" ", "microseconds")[:-6]

        return to_text

    def result_processor(self, dialect: Dialect, coltype: object) -> Any:
        if dialect.name != "sqlite":
            return super().result_processor(dialect, coltype)

        def from_text(value: str | None) -> datetime | None:
            return None if value is None else datetime.fromisoformat(value).replace(tzinfo=UTC)

        return from_text


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {datetime: UTCDateTime(), dict[str, Any]: JSON()}


class Contact(Base):
    __tablename__ = "contacts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    address: Mapped[str] = mapped_column(String(320), unique=True)
    kind: Mapped[str] = mapped_column(String(16))
    timezone: Mapped[str | None] = mapped_column(String(64))
    opted_out_at: Mapped[datetime | None]
    opt_out_reason: Mapped[str | None] = mapped_column(Text)
    # Set when a channel says the address will never work (a hard bounce):
    # nothing more is sent to it and a new conversation is refused with the reason.
    undeliverable_at: Mapped[datetime | None]
    undeliverable_reason: Mapped[str | None] = mapped_column(Text)
    # When the contact last wrote (WhatsApp's 24-hour session window hangs on it).
    last_inbound_at: Mapped[datetime | None]
    # What an import (a CSV's columns) told about the contact: name, custom
    # columns; filled into templates and shown to the agent.
    fields: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class Instance(Base):
    __tablename__ = "instances"

    # ``seq`` orders the FIFO queue even when two instances share a timestamp.
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(16), unique=True)
    contact_id: Mapped[int] = mapped_column(ForeignKey("contacts.id"), index=True)
    # Equals contact_id while this instance holds the contact's one live slot;
    # NULL otherwise. The unique index is the invariant.
    contact_slot: Mapped[int | None] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(32), index=True)
    previous_state: Mapped[str | None] = mapped_column(String(32))
    objective: Mapped[str] = mapped_column(Text)
    # The conversation's subject on channels that have one (email).
    subject: Mapped[str | None] = mapped_column(Text)
    channel: Mapped[str] = mapped_column(String(64))
    agent: Mapped[str] = mapped_column(String(64))
    window: Mapped[str | None] = mapped_column(String(128))
    heartbeat_seconds: Mapped[int] = mapped_column(Integer)
    max_followups: Mapped[int] = mapped_column(Integer)
    follow_up_count: Mapped[int] = mapped_column(Integer, default=0)
    next_heartbeat_at: Mapped[datetime | None] = mapped_column(index=True)
    heartbeat_remaining_seconds: Mapped[int | None] = mapped_column(Integer)
    heartbeat_override_seconds: Mapped[int | None] = mapped_column(Integer)
    paused_until: Mapped[datetime | None]
    # A turn is not due before this time (a first message held for the
    # sending window).
    not_before: Mapped[datetime | None]
    failure_reason: Mapped[str | None] = mapped_column(Text)
    end_reason: Mapped[str | None] = mapped_column(Text)
    # Turn leases: a claimed turn runs outside any transaction; ``version``
    # tells the commit whether anything changed meanwhile.
    version: Mapped[int] = mapped_column(Integer, default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    lease_expires_at: Mapped[datetime | None]
    turn_attempts: Mapped[int] = mapped_column(Integer, default=0)
    # What the program that started the conversation attached (``--meta k=v``),
    # returned unchanged in every event and in show/result.
    meta: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # A JSON Schema for the whole result (``--schema``), keyed by todo id.
    result_schema: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    ended_at: Mapped[datetime | None]
    # A tag grouping conversations (``relay import --campaign``, ``relay start --campaign``).
    campaign: Mapped[str | None] = mapped_column(String(128), index=True)
    # One row of one import: re-running the import starts nothing twice.
    import_key: Mapped[str | None] = mapped_column(String(64))
    # The approved template this conversation sends outside WhatsApp's 24-hour
    # window (``{"sid": "HX...", "variables": {"1": "Ann"}}``); None: relay.toml's.
    template: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # The funnel's facts (``relay stats``), written where they happen so that the
    # funnel reads instances (two covering indexes), never messages or transitions:
    # the outcome (relay.core.outcomes; NULL while live), set by the transition
    # that decides it;
    outcome: Mapped[str | None] = mapped_column(String(16))
    # when the first outbound message was delivered (the outbox records it);
    first_delivered_at: Mapped[datetime | None]
    # when the contact first wrote, and how long after the first delivery
    # (NULL when there was no delivery before it): the median's sort key;
    first_reply_at: Mapped[datetime | None]
    reply_seconds: Mapped[float | None] = mapped_column(Float)
    # every follow-up sent (``follow_up_count`` restarts at each reply; this never does).
    followups_sent: Mapped[int] = mapped_column(Integer, default=0, server_default="0")

    __table_args__ = (
        Index(CONTACT_SLOT_INDEX, "contact_slot", unique=True),
        Index(IMPORT_KEY_INDEX, "import_key", unique=True),
        Index("ix_instances_contact_id_state_seq", "contact_id", "state", "seq"),
        # Due heartbeats (and the daemon's next_due), earliest first (issue 12).
        Index("ix_instances_state_next_heartbeat_at_seq", "state", "next_heartbeat_at", "seq"),
        # The funnel (issue 11): every count of `relay stats` from one covering scan
        # of a campaign's range, grouped in index order; the median walked in
        # reply_seconds order from past the NULLs (not partial indexes: a dialect
        # keyword here loads the PostgreSQL dialect in every command, ~50 ms).
        Index(FUNNEL_INDEX, *FUNNEL_COLUMNS),
        *(Index(name, *columns) for name, columns in REPLY_INDEXES.items()),
    )


class Todo(Base):
    __tablename__ = "todos"

    instance_id: Mapped[str] = mapped_column(
        ForeignKey("instances.id", ondelete="CASCADE"), primary_key=True
    )
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    text: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16))
    updated_at: Mapped[datetime]
    # The answer the todo wants (see relay.core.answers): kind and its options.
    answer_kind: Mapped[str] = mapped_column(String(16), default="text", server_default="text")
    answer_spec: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    required: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    # The answer as recorded by the agent (normalised JSON), and where it came from.
    answer: Mapped[Any] = mapped_column(JSON, nullable=True)
    answer_message_id: Mapped[int | None] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite")
    )
    answered_at: Mapped[datetime | None]


class Message(Base):
    """A transcript row; its text is never changed, only delivery bookkeeping."""

    __tablename__ = "messages"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    instance_id: Mapped[str | None] = mapped_column(
        ForeignKey("instances.id", ondelete="CASCADE"), index=True
    )
    contact_id: Mapped[int] = mapped_column(ForeignKey("contacts.id"), index=True)
    direction: Mapped[str] = mapped_column(String(8))
    author: Mapped[str] = mapped_column(String(16))
    body: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16))
    channel: Mapped[str | None] = mapped_column(String(64))
    # Inbound: message, auto_reply or unsubscribe (see core.values.InboundKind).
    kind: Mapped[str] = mapped_column(String(16), default="message", server_default="message")
    # Inbound: the provider ids it answers (In-Reply-To, References), one per line.
    refs: Mapped[str | None] = mapped_column(Text)
    # Inbound: the message as it arrived (a whole email), for audit.
    raw: Mapped[str | None] = mapped_column(Text)
    # What relay did to the text on the way in (truncated, emptied, late).
    note: Mapped[str | None] = mapped_column(Text)
    # Outbound: the provider's latest word on it (delivered, read, bounced, ...).
    delivery_status: Mapped[str | None] = mapped_column(String(16))
    delivery_updated_at: Mapped[datetime | None]
    # Outbox bookkeeping (outbound only).
    idempotency_key: Mapped[str | None] = mapped_column(String(64), unique=True)
    provider_message_id: Mapped[str | None] = mapped_column(String(255))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None]
    # Who is sending it (a daemon id) while ``sending``: a restarted daemon takes
    # back its own dead claims at once instead of waiting out the lease.
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    proactive: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    sent_at: Mapped[datetime | None]
    processed_at: Mapped[datetime | None]

    __table_args__ = (
        Index("ix_messages_status_next_attempt_at", "status", "next_attempt_at"),
        Index("ix_messages_channel_sent_at", "channel", "sent_at"),
        Index("ix_messages_channel_provider_message_id", "channel", "provider_message_id"),
        # `relay status`: outbound by status, unread inbound (issue 12).
        Index("ix_messages_direction_status", "direction", "status"),
    )


class Transition(Base):
    """The append-only log: one row per state change."""

    __tablename__ = "transitions"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    instance_id: Mapped[str] = mapped_column(
        ForeignKey("instances.id", ondelete="CASCADE"), index=True
    )
    from_state: Mapped[str | None] = mapped_column(String(32))
    to_state: Mapped[str] = mapped_column(String(32))
    event: Mapped[str] = mapped_column(String(48))
    actor: Mapped[str] = mapped_column(String(64))
    reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]


class EventRow(Base):
    """The append-only event log a program follows (``relay events``): its id is
    the cursor. Rows are written in the transaction of what they record, and on
    PostgreSQL in commit order (see :mod:`relay.store.events`)."""

    __tablename__ = "events"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))
    # No foreign key: the log outlives what it mentions (a contact-level command
    # names no instance; a pruned instance keeps its audit trail).
    instance_id: Mapped[str | None] = mapped_column(String(16), index=True)
    actor: Mapped[str | None] = mapped_column(String(64))
    data: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime]


class StateEntry(Base):
    """Scoped key-value state: scope ``app`` (scope_id ''), ``contact`` or ``instance``."""

    __tablename__ = "state_entries"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    scope: Mapped[str] = mapped_column(String(16))
    scope_id: Mapped[str] = mapped_column(String(32))
    key: Mapped[str] = mapped_column(String(255))
    value: Mapped[Any] = mapped_column(JSON)
    updated_at: Mapped[datetime]

    __table_args__ = (UniqueConstraint("scope", "scope_id", "key"),)


class ChannelCursor(Base):
    """A channel's read position, moved in the transaction that stores what it read."""

    __tablename__ = "channel_cursors"

    channel: Mapped[str] = mapped_column(String(64), primary_key=True)
    position: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[datetime]


class ContactAlias(Base):
    """Where a contact is reached on one channel when its own address cannot be
    used there: a Telegram chat bound by ``/start <token>`` to a contact known by
    phone or email. One chat per contact per channel, one contact per chat."""

    __tablename__ = "contact_aliases"

    # Contact first: the dispatcher reads a batch's aliases by contact id.
    contact_id: Mapped[int] = mapped_column(
        ForeignKey("contacts.id", ondelete="CASCADE"), primary_key=True
    )
    channel: Mapped[str] = mapped_column(String(64), primary_key=True)
    address: Mapped[str] = mapped_column(String(320))
    created_at: Mapped[datetime]

    __table_args__ = (UniqueConstraint("channel", "address"),)


class SendSlot(Base):
    """The next free send time of one sending number (a Twilio ``from``), shared by
    every process on the store: each send moves it on by its segments' worth of
    time in one atomic ``UPDATE ... RETURNING``. Microseconds since the epoch, so
    both databases do the arithmetic exactly."""

    __tablename__ = "send_slots"

    channel: Mapped[str] = mapped_column(String(64), primary_key=True)
    sender: Mapped[str] = mapped_column(String(64), primary_key=True)
    free_at_us: Mapped[int] = mapped_column(BigInteger)


class InboundReject(Base):
    """Inbound that could not become a transcript row (a sender that is no address):
    kept, logged and counted in ``relay status`` rather than dropped."""

    __tablename__ = "inbound_rejects"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    channel: Mapped[str] = mapped_column(String(64))
    sender: Mapped[str] = mapped_column(Text)
    body: Mapped[str] = mapped_column(Text)
    provider_message_id: Mapped[str | None] = mapped_column(String(255))
    error: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime]


class Daemon(Base):
    __tablename__ = "daemons"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime]
    last_pulse_at: Mapped[datetime | None]
    stopped_at: Mapped[datetime | None]


def table_of(model: type[Base]) -> Table:
    """A model's table, for Core statements (bulk inserts of plain dicts)."""
    return cast(Table, model.__table__)
