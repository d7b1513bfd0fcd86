"""a program's contract: structured answers, instance meta, the event log

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column("id", _ID, nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("instance_id", sa.String(length=16), nullable=True),
        sa.Column("actor", sa.String(length=64), nullable=True),
        sa.Column("data", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_events")),
    )
    op.create_index(op.f("ix_events_instance_id"), "events", ["instance_id"], unique=False)
    with op.batch_alter_table("instances") as batch:
        batch.add_column(sa.Column("meta", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("result_schema", sa.JSON(), nullable=True))
    with op.batch_alter_table("todos") as batch:
        batch.add_column(
            sa.Column("answer_kind", sa.String(length=16), server_default="text", nullable=False)
        )
        batch.add_column(sa.Column("answer_spec", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("required", sa.Integer(), server_default="1", nullable=False))
        batch.add_column(sa.Column("answer", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("answer_message_id", _ID, nullable=True))
        batch.add_column(sa.Column("answered_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("todos") as batch:
        for column in (
            "answered_at",
            "answer_message_id",
            "answer",
            "required",
            "answer_spec",
            "answer_kind",
        ):
            batch.drop_column(column)
    with op.batch_alter_table("instances") as batch:
        batch.drop_column("result_schema")
        batch.drop_column("meta")
    op.drop_index(op.f("ix_events_instance_id"), table_name="events")
    op.drop_table("events")
