"""reply intents: the optional classifier's label on each reply (issue 26)

Adds ``messages.intent`` (opt_out, out_of_office, wrong_person, not_now,
interested, referral, other: :mod:`relay.core.intents`) and ``messages.intent_date``
(the date a ``not_now`` or ``out_of_office`` reply names), both null unless
``[intent] enabled`` labelled the reply, and a partial index on the labelled
rows for ``relay stats``. The downgrade drops them: the labels are readings,
the messages themselves stay.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-26 05:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("messages", sa.Column("intent", sa.String(16)))
    op.add_column("messages", sa.Column("intent_date", sa.Date()))
    labelled = sa.text("intent IS NOT NULL")
    op.create_index(
        "ix_messages_intent",
        "messages",
        ["intent"],
        postgresql_where=labelled,
        sqlite_where=labelled,
    )


def downgrade() -> None:
    op.drop_index("ix_messages_intent", table_name="messages")
    op.drop_column("messages", "intent_date")
    op.drop_column("messages", "intent")
