"""several addresses per contact, and a channel ladder per conversation (issue 30)

- ``contact_addresses``: every address of a contact, one per kind (phone, email,
  telegram), unique across contacts. The upgrade copies each contact's own
  address (``contacts.address``, which stays its identity) into it, so that
  lookups by address read one table; the downgrade drops it, and a contact
  keeps its own address (the others are lost: the old schema has no room).
- ``instances.ladder``: the channels a conversation may use, in order, each with
  the kind of address it writes to (NULL: one channel, as before);
  ``instances.fallback_seconds``: the silence after which it moves down one.

Revision ID: 0014
Revises: 0011
Create Date: 2026-11-26 02:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "contact_addresses",
        sa.Column("contact_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("address", sa.String(320), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["contact_id"],
            ["contacts.id"],
            name="fk_contact_addresses_contact_id_contacts",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("contact_id", "kind", name="pk_contact_addresses"),
        sa.UniqueConstraint("address", name="uq_contact_addresses_address"),
    )
    op.execute(
        "INSERT INTO contact_addresses (contact_id, kind, address, created_at) "
        "SELECT id, kind, address, created_at FROM contacts"
    )
    # Plain ADD/DROP COLUMN, never a batch copy of ``instances`` (see 0011).
    op.add_column("instances", sa.Column("ladder", sa.JSON()))
    op.add_column("instances", sa.Column("fallback_seconds", sa.Integer()))


def downgrade() -> None:
    op.drop_column("instances", "fallback_seconds")
    op.drop_column("instances", "ladder")
    op.drop_table("contact_addresses")
