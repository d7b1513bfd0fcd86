"""campaigns: a campaign tag and an import key on instances, fields on contacts

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("contacts") as batch:
        batch.add_column(sa.Column("fields", sa.JSON(), nullable=True))
    with op.batch_alter_table("instances") as batch:
        batch.add_column(sa.Column("campaign", sa.String(length=128), nullable=True))
        batch.add_column(sa.Column("import_key", sa.String(length=64), nullable=True))
    op.create_index("ix_instances_campaign", "instances", ["campaign"])
    op.create_index("uq_instances_import_key", "instances", ["import_key"], unique=True)


def downgrade() -> None:
    op.drop_index("uq_instances_import_key", table_name="instances")
    op.drop_index("ix_instances_campaign", table_name="instances")
    with op.batch_alter_table("instances") as batch:
        batch.drop_column("import_key")
        batch.drop_column("campaign")
    with op.batch_alter_table("contacts") as batch:
        batch.drop_column("fields")
