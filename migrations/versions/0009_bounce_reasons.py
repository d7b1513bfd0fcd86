"""why a message bounced, on the message and on the contact (issue 26)

Adds ``messages.bounce_reason`` (user_unknown, mailbox_full, spam, ... as
:mod:`relay.core.bounce_reasons` classifies the bounce), and on ``contacts``
the reason and the message of the bounce that marked the address
undeliverable (``bounce_reason``, ``undeliverable_message_id``; no foreign
key: the message may be pruned by retention while the mark stays), so that
``relay contact show`` can say which bounce caused the mark. Existing marks
keep their text reason and get no classified one.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 23:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("messages", sa.Column("bounce_reason", sa.String(32), nullable=True))
    op.add_column("contacts", sa.Column("bounce_reason", sa.String(32), nullable=True))
    op.add_column("contacts", sa.Column("undeliverable_message_id", sa.Integer(), nullable=True))


def downgrade() -> None:
    # Plain ALTER TABLE ... DROP COLUMN (SQLite >= 3.35): no batch copy of the tables.
    op.drop_column("contacts", "undeliverable_message_id")
    op.drop_column("contacts", "bounce_reason")
    op.drop_column("messages", "bounce_reason")
