"""one record per change: the transition log folded into the event log (issue 31)

A state change was written twice, a ``transitions`` row for ``relay history`` and a
``state.changed`` event for ``relay events``. It is now one ``events`` row with
four columns of its own (``from_state``, ``to_state``, ``event``, ``reason``) and
no ``data`` (``relay events`` makes it from those columns).

Up: each ``state.changed`` event takes its columns from its ``data``; each
transition is paired with its event (same conversation, states, event and time,
in id order) and then dropped. A transition without one (a bulk import's
creation, or one from before 0004) becomes a row with a negative id, in id order:
before every cursor, so ``relay events`` never lists it, and before the rows of
its conversation that came after it, so ``relay history`` keeps its order.

Down: ``transitions`` is rebuilt from the state rows of existing conversations in
id order (negative ids first), the listed ones get their ``data`` back as it was
written, and the unlisted ones leave ``events``. Going down and up again gives
back every row with its id.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-26 05:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_COLUMNS = ("from_state", "to_state", "event", "reason")
_TYPES: dict[str, sa.types.TypeEngine[str]] = {
    "from_state": sa.String(32),
    "to_state": sa.String(32),
    "event": sa.String(48),
    "reason": sa.Text(),
}
_KEYS = {"from_state": "from", "to_state": "to", "event": "event", "reason": "reason"}
_STATE = "state.changed"

#: Transitions with no event of their own, into ``events`` below every cursor.
_UNPAIRED = f"""
WITH t AS (
    SELECT id, instance_id, from_state, to_state, event, actor, reason, created_at,
           row_number() OVER (PARTITION BY instance_id, COALESCE(from_state, ''), to_state,
                              event, created_at ORDER BY id) AS k
    FROM transitions
), e AS (
    SELECT instance_id, from_state, to_state, event, created_at,
           row_number() OVER (PARTITION BY instance_id, COALESCE(from_state, ''), to_state,
                              event, created_at ORDER BY id) AS k
    FROM events WHERE kind = '{_STATE}' AND to_state IS NOT NULL
), u AS (
    SELECT t.* FROM t LEFT JOIN e
      ON e.instance_id = t.instance_id AND COALESCE(e.from_state, '') = COALESCE(t.from_state, '')
     AND e.to_state = t.to_state AND e.event = t.event AND e.created_at = t.created_at
     AND e.k = t.k
    WHERE e.instance_id IS NULL
)
INSERT INTO events (id, kind, instance_id, actor, data, created_at,
                    from_state, to_state, event, reason)
SELECT row_number() OVER (ORDER BY id) - (SELECT count(*) FROM u) - 1, '{_STATE}',
       instance_id, actor, NULL, created_at, from_state, to_state, event, reason
FROM u
"""


def upgrade() -> None:
    bind = op.get_bind()
    for name, kind in _TYPES.items():
        op.add_column("events", sa.Column(name, kind, nullable=True))
    if bind.dialect.name == "postgresql":
        field = "data->>'{}'".format
    else:
        field = "json_extract(data, '$.{}')".format
    assigned = ", ".join(f"{column} = {field(key)}" for column, key in _KEYS.items())
    op.execute(f"UPDATE events SET {assigned}, data = NULL WHERE kind = '{_STATE}'")
    op.execute(_UNPAIRED)
    op.drop_index(op.f("ix_transitions_instance_id"), table_name="transitions")
    op.drop_table("transitions")


def downgrade() -> None:
    bind = op.get_bind()
    op.create_table(
        "transitions",
        sa.Column("id", _ID, nullable=False),
        sa.Column("instance_id", sa.String(length=16), nullable=False),
        sa.Column("from_state", sa.String(length=32), nullable=True),
        sa.Column("to_state", sa.String(length=32), nullable=False),
        sa.Column("event", sa.String(length=48), nullable=False),
        sa.Column("actor", sa.String(length=64), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["instance_id"],
            ["instances.id"],
            name=op.f("fk_transitions_instance_id_instances"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_transitions")),
    )
    op.create_index(
        op.f("ix_transitions_instance_id"), "transitions", ["instance_id"], unique=False
    )
    op.execute(
        "INSERT INTO transitions (id, instance_id, from_state, to_state, event, actor, "
        "reason, created_at) SELECT row_number() OVER (ORDER BY id), instance_id, from_state, "
        "to_state, event, COALESCE(actor, ''), reason, created_at FROM events "
        "WHERE to_state IS NOT NULL AND instance_id IN (SELECT id FROM instances)"
    )
    if bind.dialect.name == "postgresql":
        op.execute(
            "SELECT setval(pg_get_serial_sequence('transitions', 'id'), "
            "COALESCE((SELECT max(id) FROM transitions), 0) + 1, false)"
        )
    _restore_data(bind)
    op.execute("DELETE FROM events WHERE id < 0")
    with op.batch_alter_table("events") as batch:
        for name in reversed(_COLUMNS):
            batch.drop_column(name)


def _restore_data(bind: sa.engine.Connection) -> None:
    """The listed state rows' ``data`` as relay wrote it (SQLAlchemy's JSON: json.dumps)."""
    events = sa.table(
        "events",
        sa.column("id", _ID),
        sa.column("kind", sa.String),
        sa.column("data", sa.JSON),
        *(sa.column(name, sa.String) for name in _COLUMNS),
    )
    last = 0
    while True:
        rows = bind.execute(
            sa.select(events.c.id, *(events.c[name] for name in _COLUMNS))
            .where(events.c.kind == _STATE, events.c.to_state.is_not(None), events.c.id > last)
            .order_by(events.c.id)
            .limit(5000)
        ).all()
        if not rows:
            return
        bind.execute(
            sa.update(events).where(events.c.id == sa.bindparam("row_id")),
            [
                {"row_id": row[0], "data": dict(zip(_KEYS.values(), row[1:], strict=True))}
                for row in rows
            ],
        )
        last = int(rows[-1][0])
