"""drop two instance indexes that a composite index already serves (issue 12)

- ``ix_instances_contact_id``: every lookup by contact (the queue, a contact's
  conversations, the foreign key's checks) is served by
  ``ix_instances_contact_id_state_seq``, whose first column it is;
- ``ix_instances_next_heartbeat_at``: the due-heartbeat claim and the
  daemon's ``next_due`` filter on the state too, which
  ``ix_instances_state_next_heartbeat_at_seq`` serves in due order (PostgreSQL
  had picked the single-column index and sorted).

On PostgreSQL an UPDATE that changes an indexed column (each firing and each
turn's commit change ``state``) writes an entry into every index of the
table, so each index costs every follow-up twice; on SQLite an UPDATE touches
only the indexes of the columns it changes. ``ix_instances_state`` and
``ix_instances_campaign`` stay: they hand ``relay list --state`` and ``--campaign``
their rows in ``seq`` order (SQLite appends the rowid), which no composite does.
``bench/query_plans.py`` shows every plan before and after.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 19:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_DROPPED = {
    "ix_instances_contact_id": ["contact_id"],
    "ix_instances_next_heartbeat_at": ["next_heartbeat_at"],
}


def upgrade() -> None:
    for name in _DROPPED:
        op.drop_index(name, table_name="instances")


def downgrade() -> None:
    for name, columns in _DROPPED.items():
        op.create_index(name, "instances", columns)
