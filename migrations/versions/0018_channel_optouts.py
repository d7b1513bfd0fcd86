"""per-channel opt-outs: an opt-out on one kind of a contact's addresses (issue 30)

``[compliance] optout_scope = "channel"`` records a no where it was said: a STOP
by SMS marks the contact's phone (``contact_addresses.opted_out_at``), an email
unsubscribe its email; the other kinds still reach the contact.

The downgrade cannot keep a per-kind mark, so it widens each into an opt-out of
the whole contact (``contacts.opted_out_at``): going down never lets a message
reach someone who said no.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-26 04:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("contact_addresses", sa.Column("opted_out_at", sa.DateTime(timezone=True)))
    op.add_column("contact_addresses", sa.Column("opt_out_reason", sa.Text()))


def downgrade() -> None:
    bind = op.get_bind()
    contacts = sa.table(
        "contacts",
        sa.column("id", sa.Integer),
        sa.column("opted_out_at", sa.DateTime(timezone=True)),
        sa.column("opt_out_reason", sa.Text),
    )
    addresses = sa.table(
        "contact_addresses",
        sa.column("contact_id", sa.Integer),
        sa.column("kind", sa.String),
        sa.column("opted_out_at", sa.DateTime(timezone=True)),
        sa.column("opt_out_reason", sa.Text),
    )
    marked = sa.select(
        addresses.c.contact_id,
        addresses.c.kind,
        addresses.c.opted_out_at,
        addresses.c.opt_out_reason,
    ).where(addresses.c.opted_out_at.is_not(None))
    for contact_id, kind, at, reason in list(bind.execute(marked)):
        bind.execute(
            contacts.update()
            .where(contacts.c.id == contact_id, contacts.c.opted_out_at.is_(None))
            .values(opted_out_at=at, opt_out_reason=f"{reason or 'opt-out'} ({kind} only)")
        )
    op.drop_column("contact_addresses", "opt_out_reason")
    op.drop_column("contact_addresses", "opted_out_at")
