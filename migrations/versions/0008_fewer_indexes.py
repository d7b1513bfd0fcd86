"""fewer instance index writes per follow-up (issue 12)

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

Four indexes on columns that are NULL for most conversations become partial
(``WHERE column IS NOT NULL``), so an UPDATE of a row whose value is NULL
writes no entry into them on PostgreSQL: ``ix_instances_campaign``,
``uq_instances_import_key`` (unique among the keys, as before: NULLs never
collided) and the two ``reply_seconds`` indexes of the median (a conversation
has none until its contact replies). Every query they serve compares the
column (``campaign = ?``, ``import_key IN (...)``) or says ``reply_seconds IS
NOT NULL``, which both databases take as implying the predicate. The
predicate is this revision's, not the models': a dialect keyword on an
``Index`` in ``relay/store/tables.py`` would import the PostgreSQL dialect in
every command.

``bench/query_plans.py`` shows every plan before and after.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 19:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_DROPPED = {
    "ix_instances_contact_id": ["contact_id"],
    "ix_instances_next_heartbeat_at": ["next_heartbeat_at"],
}


#: name: (columns, unique, the column whose NULLs are left out)
_PARTIAL = {
    "ix_instances_campaign": (["campaign"], False, "campaign"),
    "uq_instances_import_key": (["import_key"], True, "import_key"),
    "ix_instances_reply_seconds": (["reply_seconds", "created_at"], False, "reply_seconds"),
    "ix_instances_campaign_reply_seconds": (
        ["campaign", "reply_seconds", "created_at"],
        False,
        "reply_seconds",
    ),
}


def upgrade() -> None:
    for name in _DROPPED:
        op.drop_index(name, table_name="instances")
    for name, (columns, unique, column) in _PARTIAL.items():
        op.drop_index(name, table_name="instances")
        where = sa.text(f"{column} IS NOT NULL")
        op.create_index(
            name, "instances", columns, unique=unique, postgresql_where=where, sqlite_where=where
        )


def downgrade() -> None:
    for name, (columns, unique, _) in _PARTIAL.items():
        op.drop_index(name, table_name="instances")
        op.create_index(name, "instances", columns, unique=unique)
    for name, columns in _DROPPED.items():
        op.create_index(name, "instances", columns)
