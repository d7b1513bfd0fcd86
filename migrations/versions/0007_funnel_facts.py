"""the funnel's facts on the instance row (issue 11: `relay stats` on a million)

Adds to ``instances`` what ``relay stats`` counts, so that the funnel reads two
covering indexes of ``instances`` instead of aggregating ``messages`` and
``transitions``: ``outcome`` (NULL while live), ``first_delivered_at``,
``first_reply_at``, ``reply_seconds`` (first delivery to first reply) and
``followups_sent``. Backfills them from the existing messages, todos and
transitions in SQL (one UPDATE each, correlated subqueries over the
``instance_id`` indexes), then builds the indexes:

- ``ix_instances_funnel`` (campaign, outcome, created_at, first_delivered_at,
  first_reply_at, followups_sent): every count, grouped in index order;
- ``ix_instances_reply_seconds`` (reply_seconds, created_at) and
  ``ix_instances_campaign_reply_seconds`` (campaign, reply_seconds,
  created_at): the median, as the middle row of the ordered range past the
  NULLs (not partial: a dialect keyword in the models would load the
  PostgreSQL dialect in every command).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_OWN = "m.instance_id = instances.id"
_BACKFILL = {
    "first_delivered_at": "SELECT min(m.sent_at) FROM messages m WHERE "
    f"{_OWN} AND m.direction = 'outbound' AND m.status = 'sent'",
    "first_reply_at": "SELECT min(m.created_at) FROM messages m WHERE "
    f"{_OWN} AND m.direction = 'inbound' AND m.kind = 'message'",
    "followups_sent": "SELECT count(*) FROM transitions m WHERE "
    f"{_OWN} AND m.event = 'followup_sent'",
}
# relay.core.outcomes.outcome_of, over the stored state and reasons (literals:
# a revision must not change when the code does).
_OUTCOME = """CASE
  WHEN state IN ('COMPLETED', 'ABANDONED', 'FAILED')
       AND (end_reason = 'opted_out' OR failure_reason = 'opted_out') THEN 'opted_out'
  WHEN state = 'COMPLETED' AND EXISTS (
       SELECT 1 FROM todos t WHERE t.instance_id = instances.id AND t.required = 1
       AND t.status IN ('pending', 'in_progress')) THEN 'ended_early'
  WHEN state = 'COMPLETED' THEN 'completed'
  WHEN state = 'ABANDONED' THEN 'abandoned'
  WHEN state = 'FAILED' THEN 'failed'
  WHEN state = 'NEEDS_HUMAN_INTERVENTION' THEN 'needs_human'
END"""
_REPLY = {
    "ix_instances_reply_seconds": ["reply_seconds", "created_at"],
    "ix_instances_campaign_reply_seconds": ["campaign", "reply_seconds", "created_at"],
}
_COLUMNS = ("followups_sent", "reply_seconds", "first_reply_at", "first_delivered_at", "outcome")
_FUNNEL = ["campaign", "outcome", "created_at", "first_delivered_at", "first_reply_at",
           "followups_sent"]  # fmt: skip


def _seconds(later: str, earlier: str) -> str:
    if op.get_bind().dialect.name == "postgresql":
        return f"extract(epoch from {later} - {earlier})"
    return f"(julianday({later}) - julianday({earlier})) * 86400.0"


def upgrade() -> None:
    for column in (
        sa.Column("outcome", sa.String(16), nullable=True),
        sa.Column("first_delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("first_reply_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("reply_seconds", sa.Float(), nullable=True),
        sa.Column("followups_sent", sa.Integer(), nullable=False, server_default="0"),
    ):
        op.add_column("instances", column)
    sets = ", ".join(f"{column} = ({query})" for column, query in _BACKFILL.items())
    op.execute(f"UPDATE instances SET outcome = {_OUTCOME}, {sets}")
    op.execute(
        f"UPDATE instances SET reply_seconds = {_seconds('first_reply_at', 'first_delivered_at')} "
        "WHERE first_reply_at >= first_delivered_at"
    )
    op.create_index("ix_instances_funnel", "instances", _FUNNEL)
    for name, columns in _REPLY.items():
        op.create_index(name, "instances", columns)


def downgrade() -> None:
    for name in _REPLY:
        op.drop_index(name, table_name="instances")
    op.drop_index("ix_instances_funnel", table_name="instances")
    # Plain ALTER TABLE ... DROP COLUMN (SQLite >= 3.35), not a batch copy of the
    # table: dropping ``instances`` to copy it would cascade to its messages.
    for column in _COLUMNS:
        op.drop_column("instances", column)
