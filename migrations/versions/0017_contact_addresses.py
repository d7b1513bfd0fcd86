"""several addresses per contact, and a channel ladder per conversation (issue 30)

- ``contact_addresses``: every address of a contact, one per kind (phone, email,
  telegram), unique across contacts. The upgrade copies each contact's own
  address (``contacts.address``, which stays its identity) into it, so that
  lookups by address read one table; the downgrade drops it, a contact keeps
  its own address, and its others go into its fields (``{"email": ...}``, as
  an import's email column was kept before): nothing is lost going down.
- ``instances.ladder``: the channels a conversation may use, in order, each with
  the kind of address it writes to (NULL: one channel, as before);
  ``instances.fallback_seconds``: the silence after which it moves down one.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26 02:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
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
    _others_into_fields()
    op.drop_table("contact_addresses")


def _others_into_fields() -> None:
    """Each contact's addresses other than its own, as fields of the contact."""
    bind = op.get_bind()
    contacts = sa.table(
        "contacts", sa.column("id", sa.Integer), sa.column("address"), sa.column("fields", sa.JSON)
    )
    addresses = sa.table(
        "contact_addresses", sa.column("contact_id"), sa.column("kind"), sa.column("address")
    )
    query = (
        sa.select(contacts.c.id, contacts.c.fields, addresses.c.kind, addresses.c.address)
        .join(addresses, addresses.c.contact_id == contacts.c.id)
        .where(addresses.c.address != contacts.c.address)
    )
    others: dict[int, dict[str, object]] = {}
    for contact_id, fields, kind, address in bind.execute(query):
        others.setdefault(contact_id, dict(fields or {}))[kind] = address
    for contact_id, fields in others.items():
        bind.execute(contacts.update().where(contacts.c.id == contact_id).values(fields=fields))
