"""The instance store's schema, once: SQLAlchemy Core tables.

Core rather than declarative classes so that a read command (``list``, ``status``,
``show``) can query the store without loading the ORM's mapped classes (about
15 ms of a cold command, and their mapper configuration on first use);
:mod:`relay.store.models` maps its classes onto these tables for the write side.

Every change needs an Alembic revision (``migrations/``); a test compares the two.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Date,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

from relay.store.types import UTCDateTime

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING)
LABELLED = text("intent IS NOT NULL")  # `relay stats`: replies by label, the labelled rows

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

#: Timezone-aware UTC times on every backend.
TIME = UTCDateTime()
#: Ids of the append-only logs: 64-bit on PostgreSQL, SQLite's rowid there.
BIG_ID = BigInteger().with_variant(Integer, "sqlite")

contacts = Table(
    "contacts",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("address", String(320), nullable=False, unique=True),
    Column("kind", String(16), nullable=False),
    Column("timezone", String(64)),
    Column("opted_out_at", TIME),
    Column("opt_out_reason", Text),
    # Set when a channel says the address will never work (a hard bounce):
    # nothing more is sent to it and a new conversation is refused with the reason.
    Column("undeliverable_at", TIME),
    Column("undeliverable_reason", Text),
    # The bounce that set the mark: its classified reason (relay.core.bounce_reasons)
    # and its outbound message (no foreign key: retention may prune the message).
    Column("bounce_reason", String(32)),
    Column("undeliverable_message_id", Integer),
    # When the contact last wrote (WhatsApp's 24-hour session window hangs on it).
    Column("last_inbound_at", TIME),
    # What an import (a CSV's columns) told about the contact: name, custom
    # columns; filled into templates and shown to the agent.
    Column("fields", JSON),
    Column("created_at", TIME, nullable=False),
    Column("updated_at", TIME, nullable=False),
    # Where and when the contact consented, as the operator wrote it ("web form
    # 2026-03-01"), and when relay recorded it (0015; see docs/compliance.md).
    Column("consent", Text),
    Column("consent_at", TIME),
)

instances = Table(
    "instances",
    metadata,
    # ``seq`` orders the FIFO queue even when two instances share a timestamp.
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("id", String(16), nullable=False, unique=True),
    Column("contact_id", ForeignKey("contacts.id"), nullable=False),
    # Equals contact_id while this instance holds the contact's one live slot;
    # NULL otherwise. The unique index is the invariant.
    Column("contact_slot", Integer),
    Column("state", String(32), nullable=False, index=True),
    Column("previous_state", String(32)),
    Column("objective", Text, nullable=False),
    # The conversation's subject on channels that have one (email).
    Column("subject", Text),
    Column("channel", String(64), nullable=False),
    Column("agent", String(64), nullable=False),
    Column("window", String(128)),
    Column("heartbeat_seconds", Integer, nullable=False),
    Column("max_followups", Integer, nullable=False),
    Column("follow_up_count", Integer, nullable=False, default=0),
    Column("next_heartbeat_at", TIME),
    Column("heartbeat_remaining_seconds", Integer),
    Column("heartbeat_override_seconds", Integer),
    Column("paused_until", TIME),
    # A turn is not due before this time (a first message held for the
    # sending window).
    Column("not_before", TIME),
    Column("failure_reason", Text),
    Column("end_reason", Text),
    # Turn leases: a claimed turn runs outside any transaction; ``version``
    # tells the commit whether anything changed meanwhile.
    Column("version", Integer, nullable=False, default=0),
    Column("lease_owner", String(64)),
    Column("lease_expires_at", TIME),
    Column("turn_attempts", Integer, nullable=False, default=0),
    # What the program that started the conversation attached (``--meta k=v``),
    # returned unchanged in every event and in show/result.
    Column("meta", JSON),
    # A JSON Schema for the whole result (``--schema``), keyed by todo id.
    Column("result_schema", JSON),
    Column("created_at", TIME, nullable=False),
    Column("updated_at", TIME, nullable=False),
    Column("ended_at", TIME),
    # A tag grouping conversations (``relay import --campaign``, ``relay start --campaign``).
    Column("campaign", String(128), index=True),
    # One row of one import: re-running the import starts nothing twice.
    Column("import_key", String(64)),
    # The approved template this conversation sends outside WhatsApp's 24-hour
    # window (``{"sid": "HX...", "variables": {"1": "Ann"}}``); None: relay.toml's.
    Column("template", JSON),
    # The funnel's facts (``relay stats``), written where they happen so that the
    # funnel reads instances (two covering indexes), never messages or transitions:
    # the outcome (relay.core.outcomes; NULL while live), set by the transition
    # that decides it;
    Column("outcome", String(16)),
    # when the first outbound message was delivered (the outbox records it);
    Column("first_delivered_at", TIME),
    # when the contact first wrote, and how long after the first delivery
    # (NULL when there was no delivery before it): the median's sort key;
    Column("first_reply_at", TIME),
    Column("reply_seconds", Float),
    # every follow-up sent (``follow_up_count`` restarts at each reply; this never does).
    Column("followups_sent", Integer, nullable=False, default=0, server_default="0"),
    # Which of the agent's messages a person approves first (first, all; NULL: none),
    # and how many wait for it now: the follow-up countdown waits for them (0011).
    Column("approval", String(8)),
    Column("drafts_pending", Integer, nullable=False, default=0, server_default="0"),
    # The channel ladder (relay.core.ladder): [[channel, address kind], ...] in order,
    # ``channel`` being the rung in use; NULL: one channel, the contact's own address
    # (0014). And the silence after which the next message moves down a rung.
    Column("ladder", JSON),
    Column("fallback_seconds", Integer),
    Index(CONTACT_SLOT_INDEX, "contact_slot", unique=True),
    Index(IMPORT_KEY_INDEX, "import_key", unique=True),
    Index("ix_instances_contact_id_state_seq", "contact_id", "state", "seq"),
    # Due heartbeats (and the daemon's next_due), earliest first (issue 12).
    Index("ix_instances_state_next_heartbeat_at_seq", "state", "next_heartbeat_at", "seq"),
    # The funnel (issue 11): every count of `relay stats` from one covering scan
    # of a campaign's range, grouped in index order; the median walked in
    # reply_seconds order past the NULLs. Migration 0008 makes the reply_seconds
    # indexes, campaign's and import_key's partial (IS NOT NULL: no entry for a
    # row without a value, so an UPDATE of one writes none); the predicate is
    # not declared here: a dialect keyword loads the PostgreSQL dialect in every
    # command (~50 ms).
    Index(FUNNEL_INDEX, *FUNNEL_COLUMNS),
    *(Index(name, *columns) for name, columns in REPLY_INDEXES.items()),
    # The console's list by last change, all and within a campaign (issue 29;
    # migration 0012 makes the campaign's partial, as above).
    Index("ix_instances_updated_at_seq", "updated_at", "seq"),
    Index("ix_instances_campaign_updated_at_seq", "campaign", "updated_at", "seq"),
)

todos = Table(
    "todos",
    metadata,
    Column("instance_id", ForeignKey("instances.id", ondelete="CASCADE"), primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("text", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("updated_at", TIME, nullable=False),
    # The answer the todo wants (see relay.core.answers): kind and its options.
    Column("answer_kind", String(16), nullable=False, default="text", server_default="text"),
    Column("answer_spec", JSON),
    Column("required", Integer, nullable=False, default=1, server_default="1"),
    # The answer as recorded by the agent (normalised JSON), and where it came from.
    Column("answer", JSON),
    Column("answer_message_id", BIG_ID),
    Column("answered_at", TIME),
)

#: Transcript rows; their text is never changed, only delivery bookkeeping.
messages = Table(
    "messages",
    metadata,
    Column("id", BIG_ID, primary_key=True),
    Column("instance_id", ForeignKey("instances.id", ondelete="CASCADE"), index=True),
    Column("contact_id", ForeignKey("contacts.id"), nullable=False, index=True),
    Column("direction", String(8), nullable=False),
    Column("author", String(16), nullable=False),
    Column("body", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("channel", String(64)),
    # Inbound: message, auto_reply, unsubscribe or complaint (see core.values.InboundKind).
    Column("kind", String(16), nullable=False, default="message", server_default="message"),
    # Inbound: the provider ids it answers (In-Reply-To, References), one per line.
    Column("refs", Text),
    # Inbound: the message as it arrived (a whole email), for audit.
    Column("raw", Text),
    # What relay did to the text on the way in (truncated, emptied, late).
    Column("note", Text),
    # Outbound: the provider's latest word on it (delivered, read, bounced, ...).
    Column("delivery_status", String(16)),
    Column("delivery_updated_at", TIME),
    # Outbox bookkeeping (outbound only).
    Column("idempotency_key", String(64), unique=True),
    Column("provider_message_id", String(255)),
    Column("attempts", Integer, nullable=False, default=0),
    Column("next_attempt_at", TIME),
    # Who is sending it (a daemon id) while ``sending``: a restarted daemon takes
    # back its own dead claims at once instead of waiting out the lease.
    Column("lease_owner", String(64)),
    Column("proactive", Integer, nullable=False, default=0),
    Column("last_error", Text),
    # Outbound: why it bounced (relay.core.bounce_reasons), when it did.
    Column("bounce_reason", String(32)),
    Column("intent", String(16)),  # inbound: [intent]'s label (relay.core.intents), its date
    Column("intent_date", Date),
    Column("created_at", TIME, nullable=False),
    Column("sent_at", TIME),
    Column("processed_at", TIME),
    Index("ix_messages_status_next_attempt_at", "status", "next_attempt_at"),
    Index("ix_messages_channel_sent_at", "channel", "sent_at"),
    Index("ix_messages_channel_provider_message_id", "channel", "provider_message_id"),
    # `relay status`: outbound by status, unread inbound (issue 12).
    Index("ix_messages_direction_status", "direction", "status"),
    Index("ix_messages_intent", "intent", sqlite_where=LABELLED, postgresql_where=LABELLED),
)

#: The append-only record of what happened, one row per thing (issue 31): what
#: ``relay events`` lists (its id is the cursor) and, for a state change, what
#: ``relay history`` lists. Rows are written in the transaction of what they
#: record, and on PostgreSQL in commit order (see :mod:`relay.store.events`).
events = Table(
    "events",
    metadata,
    Column("id", BIG_ID, primary_key=True),
    # relay.core.values.EventKind; ``state.logged`` is a state change
    # that ``relay events`` does not list (a bulk import's, or one from before 0004).
    Column("kind", String(32), nullable=False),
    # No foreign key: the log outlives what it mentions (a contact-level command
    # names no instance; a pruned instance keeps its audit trail).
    Column("instance_id", String(16), index=True),
    Column("actor", String(64)),
    # What ``relay events`` shows as ``data``; NULL for a state change, whose
    # ``data`` is made from the four columns below (which only it has). None is
    # SQL NULL, not JSON's null.
    Column("data", JSON(none_as_null=True)),
    Column("created_at", TIME, nullable=False),
    Column("from_state", String(32)),
    Column("to_state", String(32)),
    # The state machine's event that made the change (relay.core.states.Event).
    Column("event", String(48)),
    Column("reason", Text),
)

#: Scoped key-value state: scope ``app`` (scope_id ''), ``contact`` or ``instance``.
state_entries = Table(
    "state_entries",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("scope", String(16), nullable=False),
    Column("scope_id", String(32), nullable=False),
    Column("key", String(255), nullable=False),
    Column("value", JSON, nullable=False),
    Column("updated_at", TIME, nullable=False),
    UniqueConstraint("scope", "scope_id", "key"),
)

#: A channel's read position, moved in the transaction that stores what it read.
channel_cursors = Table(
    "channel_cursors",
    metadata,
    Column("channel", String(64), primary_key=True),
    Column("position", Text, nullable=False),
    Column("updated_at", TIME, nullable=False),
)

#: Where a contact is reached on one channel when its own address cannot be used
#: there: a Telegram chat bound by ``/start <token>`` to a contact known by phone
#: or email. One chat per contact per channel, one contact per chat.
contact_aliases = Table(
    "contact_aliases",
    metadata,
    # Contact first: the dispatcher reads a batch's aliases by contact id.
    Column("contact_id", ForeignKey("contacts.id", ondelete="CASCADE"), primary_key=True),
    Column("channel", String(64), primary_key=True),
    Column("address", String(320), nullable=False),
    Column("created_at", TIME, nullable=False),
    UniqueConstraint("channel", "address"),
)

#: Every address of a contact, one of each kind (phone, email, telegram), its own
#: (``contacts.address``) among them: an inbound message from any of them is the
#: contact's, and a channel ladder writes to the one its channel takes. One
#: address is one person's (0014).
contact_addresses = Table(
    "contact_addresses",
    metadata,
    Column("contact_id", ForeignKey("contacts.id", ondelete="CASCADE"), primary_key=True),
    Column("kind", String(16), primary_key=True),
    Column("address", String(320), nullable=False, unique=True),
    Column("created_at", TIME, nullable=False),
    #: ``[compliance] optout_scope = "channel"``: the contact said no on this kind
    #: only (a STOP by SMS: the phone); every channel writing to it is refused.
    Column("opted_out_at", TIME),
    Column("opt_out_reason", Text),
)

#: The next free send time of one sending number (a Twilio ``from``), shared by
#: every process on the store: each send moves it on by its segments' worth of
#: time in one atomic ``UPDATE ... RETURNING``. Microseconds since the epoch, so
#: both databases do the arithmetic exactly.
send_slots = Table(
    "send_slots",
    metadata,
    Column("channel", String(64), primary_key=True),
    Column("sender", String(64), primary_key=True),
    Column("free_at_us", BigInteger, nullable=False),
)

#: Inbound that could not become a transcript row (a sender that is no address):
#: kept, logged and counted in ``relay status`` rather than dropped.
inbound_rejects = Table(
    "inbound_rejects",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("channel", String(64), nullable=False),
    Column("sender", Text, nullable=False),
    Column("body", Text, nullable=False),
    Column("provider_message_id", String(255)),
    Column("error", Text, nullable=False),
    Column("created_at", TIME, nullable=False),
)

#: What is left of an erased contact (``relay contact erase``): a keyed hash of
#: each address (:mod:`relay.core.suppression`), so the address is refused ever
#: after without the store holding it; ``key_id`` names the key that made it.
erasures = Table(
    "erasures",
    metadata,
    Column("address_hash", String(64), primary_key=True),
    Column("key_id", String(16), nullable=False),
    Column("erased_at", TIME, nullable=False),
)

#: What a provider pushed to ``relay serve`` (an inbound message, a receipt),
#: stored as it came by one INSERT before the request is answered; the daemon
#: takes it from here into the transcript (routing, opt-outs, receipts) and
#: deletes it in that same transaction. ``incoming``: the request's messages and
#: receipts as JSON (``Incoming.dumps`` in relay.channels.base). No index but the key: the
#: daemon reads it in id order and the server only appends.
pushes = Table(
    "pushes",
    metadata,
    Column("id", BIG_ID, primary_key=True, autoincrement=True),
    Column("channel", String(64), nullable=False),
    Column("incoming", Text, nullable=False),
    Column("received_at", TIME, nullable=False),
)

daemons = Table(
    "daemons",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("host", String(255), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("started_at", TIME, nullable=False),
    Column("last_pulse_at", TIME),
    Column("stopped_at", TIME),
)
