"""the channel contract: stored read positions, threads, receipts, bounces

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23 02:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "channel_cursors",
        sa.Column("channel", sa.String(length=64), nullable=False),
        sa.Column("position", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("channel", name=op.f("pk_channel_cursors")),
    )
    op.create_table(
        "inbound_rejects",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("channel", sa.String(length=64), nullable=False),
        sa.Column("sender", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("provider_message_id", sa.String(length=255), nullable=True),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_inbound_rejects")),
    )
    with op.batch_alter_table("contacts") as batch:
        batch.add_column(sa.Column("undeliverable_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("undeliverable_reason", sa.Text(), nullable=True))
        batch.add_column(sa.Column("last_inbound_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("instances") as batch:
        batch.add_column(sa.Column("subject", sa.Text(), nullable=True))
    with op.batch_alter_table("messages") as batch:
        batch.add_column(
            sa.Column("kind", sa.String(length=16), server_default="message", nullable=False)
        )
        batch.add_column(sa.Column("refs", sa.Text(), nullable=True))
        batch.add_column(sa.Column("raw", sa.Text(), nullable=True))
        batch.add_column(sa.Column("note", sa.Text(), nullable=True))
        batch.add_column(sa.Column("delivery_status", sa.String(length=16), nullable=True))
        batch.add_column(
            sa.Column("delivery_updated_at", sa.DateTime(timezone=True), nullable=True)
        )
        batch.add_column(sa.Column("lease_owner", sa.String(length=64), nullable=True))
    op.create_index(
        "ix_messages_channel_provider_message_id",
        "messages",
        ["channel", "provider_message_id"],
    )


def downgrade() -> None:
    op.drop_index("ix_messages_channel_provider_message_id", table_name="messages")
    with op.batch_alter_table("messages") as batch:
        for column in (
            "lease_owner",
            "delivery_updated_at",
            "delivery_status",
            "note",
            "raw",
            "refs",
            "kind",
        ):
            batch.drop_column(column)
    with op.batch_alter_table("instances") as batch:
        batch.drop_column("subject")
    with op.batch_alter_table("contacts") as batch:
        batch.drop_column("last_inbound_at")
        batch.drop_column("undeliverable_reason")
        batch.drop_column("undeliverable_at")
    op.drop_table("inbound_rejects")
    op.drop_table("channel_cursors")
