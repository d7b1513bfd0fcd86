"""the console's list sorted by last change, in index order (issue 29)

- ``ix_instances_updated_at_seq``: every conversation by ``updated_at`` (then
  ``seq``), which the console's ``sort=updated`` (newest first) and
  ``sort=oldest`` (Needs a person's order) read a page of;
- ``ix_instances_campaign_updated_at_seq``: the same within one campaign, for
  the list filtered by campaign (the issue's "list of 10,000 conversations,
  filtered"). Partial (``campaign IS NOT NULL``) as ``ix_instances_campaign``
  is since 0008: the query says ``campaign = ?``, which both databases take as
  implying the predicate, and a conversation without a campaign writes no entry.

Without them both databases read every matching row and sorted it to return
fifty: on a million conversations the campaign's 10,000 rows, or all of them
unfiltered (``bench/query_plans.py`` and ``bench/console_page.py`` show the
plans and the times). ``updated_at`` changes with every write of a conversation,
so each index costs every such write an entry: two, not one per filter.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26 02:15:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_instances_updated_at_seq", "instances", ["updated_at", "seq"])
    where = sa.text("campaign IS NOT NULL")
    op.create_index(
        "ix_instances_campaign_updated_at_seq",
        "instances",
        ["campaign", "updated_at", "seq"],
        postgresql_where=where,
        sqlite_where=where,
    )


def downgrade() -> None:
    op.drop_index("ix_instances_campaign_updated_at_seq", table_name="instances")
    op.drop_index("ix_instances_updated_at_seq", table_name="instances")
