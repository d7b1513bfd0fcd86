"""issue 10's remainder: Telegram chats bound to contacts, per-conversation
WhatsApp templates, send pacing shared across processes

- contact_aliases: (channel, contact) -> the chat a ``/start <token>`` bound;
- instances.template: the conversation's own approved template (JSON);
- send_slots: (channel, sender) -> the next free send time, in microseconds.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "contact_aliases",
        sa.Column("contact_id", sa.Integer(), nullable=False),
        sa.Column("channel", sa.String(length=64), nullable=False),
        sa.Column("address", sa.String(length=320), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["contact_id"],
            ["contacts.id"],
            name=op.f("fk_contact_aliases_contact_id_contacts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("contact_id", "channel", name=op.f("pk_contact_aliases")),
        sa.UniqueConstraint("channel", "address", name=op.f("uq_contact_aliases_channel_address")),
    )
    op.create_table(
        "send_slots",
        sa.Column("channel", sa.String(length=64), nullable=False),
        sa.Column("sender", sa.String(length=64), nullable=False),
        sa.Column("free_at_us", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("channel", "sender", name=op.f("pk_send_slots")),
    )
    with op.batch_alter_table("instances") as batch:
        batch.add_column(sa.Column("template", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("instances") as batch:
        batch.drop_column("template")
    op.drop_table("send_slots")
    op.drop_table("contact_aliases")
