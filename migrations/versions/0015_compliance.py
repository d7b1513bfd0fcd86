"""consent records and erasures (issue 30)

- ``contacts.consent``: where and when the contact gave consent, as the
  operator wrote it (``web form 2026-03-01``), and ``contacts.consent_at``: when
  relay recorded it;
- ``erasures``: what is left of an erased contact: a keyed hash (HMAC-SHA256)
  of each of its addresses, the id of the key that made it and when, so a later
  ``start`` or ``import`` of the address is refused ("erased on DATE") without
  the store holding the address.

Revision ID: 0015
Revises: 0012
Create Date: 2026-11-26 02:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN, never a batch copy of ``contacts`` (see 0011 and 0007).
    op.add_column("contacts", sa.Column("consent", sa.Text()))
    op.add_column("contacts", sa.Column("consent_at", sa.DateTime(timezone=True)))
    op.create_table(
        "erasures",
        sa.Column("address_hash", sa.String(64), nullable=False),
        sa.Column("key_id", sa.String(16), nullable=False),
        sa.Column("erased_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("address_hash", name="pk_erasures"),
    )


def downgrade() -> None:
    op.drop_table("erasures")
    op.drop_column("contacts", "consent_at")
    op.drop_column("contacts", "consent")
