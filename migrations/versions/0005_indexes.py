"""indexes for the queries that grow with the store (issue 12)

- instances (state, next_heartbeat_at, seq): the due-heartbeat claim and the
  daemon's ``next_due`` read only the due end of the waiting range, in order,
  instead of every waiting instance and a sort;
- messages (direction, status): ``relay status`` counts outbound by status and
  finds unread inbound from a covering index range instead of the table.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 03:30:00
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_instances_state_next_heartbeat_at_seq",
        "instances",
        ["state", "next_heartbeat_at", "seq"],
    )
    op.create_index("ix_messages_direction_status", "messages", ["direction", "status"])


def downgrade() -> None:
    op.drop_index("ix_messages_direction_status", table_name="messages")
    op.drop_index("ix_instances_state_next_heartbeat_at_seq", table_name="instances")
