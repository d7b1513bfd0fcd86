"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-21 22:44:08.177126
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table(
        "contacts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("address", sa.String(length=320), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("timezone", sa.String(length=64), nullable=True),
        sa.Column("opted_out_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("opt_out_reason", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_contacts")),
        sa.UniqueConstraint("address", name=op.f("uq_contacts_address")),
    )
    op.create_table(
        "daemons",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_pulse_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("stopped_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_daemons")),
    )
    op.create_table(
        "state_entries",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("scope_id", sa.String(length=32), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("value", sa.JSON(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_state_entries")),
        sa.UniqueConstraint(
            "scope", "scope_id", "key", name=op.f("uq_state_entries_scope_scope_id_key")
        ),
    )
    op.create_table(
        "instances",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=16), nullable=False),
        sa.Column("contact_id", sa.Integer(), nullable=False),
        sa.Column("contact_slot", sa.Integer(), nullable=True),
        sa.Column("state", sa.String(length=32), nullable=False),
        sa.Column("previous_state", sa.String(length=32), nullable=True),
        sa.Column("objective", sa.Text(), nullable=False),
        sa.Column("channel", sa.String(length=64), nullable=False),
        sa.Column("agent", sa.String(length=64), nullable=False),
        sa.Column("window", sa.String(length=128), nullable=True),
        sa.Column("heartbeat_seconds", sa.Integer(), nullable=False),
        sa.Column("max_followups", sa.Integer(), nullable=False),
        sa.Column("follow_up_count", sa.Integer(), nullable=False),
        sa.Column("next_heartbeat_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("heartbeat_remaining_seconds", sa.Integer(), nullable=True),
        sa.Column("heartbeat_override_seconds", sa.Integer(), nullable=True),
        sa.Column("paused_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("not_before", sa.DateTime(timezone=True), nullable=True),
        sa.Column("failure_reason", sa.Text(), nullable=True),
        sa.Column("end_reason", sa.Text(), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("lease_owner", sa.String(length=64), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("turn_attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["contact_id"], ["contacts.id"], name=op.f("fk_instances_contact_id_contacts")
        ),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_instances")),
        sa.UniqueConstraint("id", name=op.f("uq_instances_id")),
    )
    op.create_index(op.f("ix_instances_contact_id"), "instances", ["contact_id"], unique=False)
    op.create_index(
        "ix_instances_contact_id_state_seq",
        "instances",
        ["contact_id", "state", "seq"],
        unique=False,
    )
    op.create_index(
        op.f("ix_instances_next_heartbeat_at"), "instances", ["next_heartbeat_at"], unique=False
    )
    op.create_index(op.f("ix_instances_state"), "instances", ["state"], unique=False)
    op.create_index("uq_instances_contact_slot", "instances", ["contact_slot"], unique=True)
    op.create_table(
        "messages",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("instance_id", sa.String(length=16), nullable=True),
        sa.Column("contact_id", sa.Integer(), nullable=False),
        sa.Column("direction", sa.String(length=8), nullable=False),
        sa.Column("author", sa.String(length=16), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("channel", sa.String(length=64), nullable=True),
        sa.Column("idempotency_key", sa.String(length=64), nullable=True),
        sa.Column("provider_message_id", sa.String(length=255), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("proactive", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("processed_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["contact_id"], ["contacts.id"], name=op.f("fk_messages_contact_id_contacts")
        ),
        sa.ForeignKeyConstraint(
            ["instance_id"],
            ["instances.id"],
            name=op.f("fk_messages_instance_id_instances"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_messages")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_messages_idempotency_key")),
    )
    op.create_index("ix_messages_channel_sent_at", "messages", ["channel", "sent_at"], unique=False)
    op.create_index(op.f("ix_messages_contact_id"), "messages", ["contact_id"], unique=False)
    op.create_index(op.f("ix_messages_instance_id"), "messages", ["instance_id"], unique=False)
    op.create_index(
        "ix_messages_status_next_attempt_at",
        "messages",
        ["status", "next_attempt_at"],
        unique=False,
    )
    op.create_table(
        "todos",
        sa.Column("instance_id", sa.String(length=16), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["instance_id"],
            ["instances.id"],
            name=op.f("fk_todos_instance_id_instances"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("instance_id", "position", name=op.f("pk_todos")),
    )
    op.create_table(
        "transitions",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("instance_id", sa.String(length=16), nullable=False),
        sa.Column("from_state", sa.String(length=32), nullable=True),
        sa.Column("to_state", sa.String(length=32), nullable=False),
        sa.Column("event", sa.String(length=48), nullable=False),
        sa.Column("actor", sa.String(length=64), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["instance_id"],
            ["instances.id"],
            name=op.f("fk_transitions_instance_id_instances"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_transitions")),
    )
    op.create_index(
        op.f("ix_transitions_instance_id"), "transitions", ["instance_id"], unique=False
    )


def downgrade() -> None:

    op.drop_index(op.f("ix_transitions_instance_id"), table_name="transitions")
    op.drop_table("transitions")
    op.drop_table("todos")
    op.drop_index("ix_messages_status_next_attempt_at", table_name="messages")
    op.drop_index(op.f("ix_messages_instance_id"), table_name="messages")
    op.drop_index(op.f("ix_messages_contact_id"), table_name="messages")
    op.drop_index("ix_messages_channel_sent_at", table_name="messages")
    op.drop_table("messages")
    op.drop_index("uq_instances_contact_slot", table_name="instances")
    op.drop_index(op.f("ix_instances_state"), table_name="instances")
    op.drop_index(op.f("ix_instances_next_heartbeat_at"), table_name="instances")
    op.drop_index("ix_instances_contact_id_state_seq", table_name="instances")
    op.drop_index(op.f("ix_instances_contact_id"), table_name="instances")
    op.drop_table("instances")
    op.drop_table("state_entries")
    op.drop_table("daemons")
    op.drop_table("contacts")
