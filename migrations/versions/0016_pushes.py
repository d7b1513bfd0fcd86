"""what ``relay serve`` stores before it answers (issue 31)

``pushes``: each verified webhook (an inbound message, a delivery receipt) as
it came, one INSERT per request (or one transaction for the requests of a few
milliseconds); the daemon takes the rows into the transcript and deletes them.
A downgrade first needs the daemon to have taken every row: rows still waiting
would be lost, so it refuses while any is left.

Revision ID: 0016
Revises: 0011
Create Date: 2026-11-26 02:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pushes",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("channel", sa.String(64), nullable=False),
        sa.Column("incoming", sa.Text(), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pushes")),
    )


def downgrade() -> None:
    from relay.core.errors import RelayError

    waiting = op.get_bind().execute(sa.text("SELECT count(*) FROM pushes")).scalar()
    if waiting:
        raise RelayError(
            f"{waiting} webhook(s) stored by relay serve are not yet taken in: stop relay "
            "serve, run relay tick until none is left, then downgrade"
        )
    op.drop_table("pushes")
