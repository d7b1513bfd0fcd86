"""drafts a person approves (issue 28)

- ``instances.approval``: which of the agent's messages wait for a person
  (``first``: the opening message; ``all``: every one); NULL: none;
- ``instances.drafts_pending``: how many of its messages wait for approval now.
  While any does, the follow-up countdown does not run (it starts when the
  last one is approved), so the heartbeat is read off the row, never a count
  of messages.

Drafts themselves are message rows with status ``draft`` (``rejected``,
``edited`` once decided); the status column takes any short text, so the
messages table needs no change.

Revision ID: 0011
Revises: 0008
Create Date: 2026-11-25 23:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ALTER TABLE ... ADD/DROP COLUMN (SQLite >= 3.35 has both), never a batch
    # copy of the table: dropping ``instances`` to copy it would cascade to every
    # conversation's messages and todos on SQLite (as 0007 explains).
    op.add_column("instances", sa.Column("approval", sa.String(8)))
    op.add_column(
        "instances", sa.Column("drafts_pending", sa.Integer(), nullable=False, server_default="0")
    )


def downgrade() -> None:
    op.drop_column("instances", "drafts_pending")
    op.drop_column("instances", "approval")
