"""Bulk seeding for the benchmarks: millions of conversations in seconds, not hours.

One conversation is made through the real API (start, first turn, delivery), so
its rows are whatever relay writes today. Its rows are then cloned inside the
database with one ``INSERT ... SELECT`` per table over a generated series (a
recursive CTE on SQLite, ``generate_series`` on PostgreSQL): new ids, contacts
and addresses, the state and heartbeat chosen by the caller, everything else as
the template. No per-row API call, no per-row Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, text

from relay.api import Relay
from relay.core.states import PAUSED_STATES, SLOT_STATES, values
from relay.runner.pulse import Pulse
from relay.store.tables import metadata

#: States that hold the contact's slot (relay.core.states); the clones get one contact each.
SLOT_HOLDERS = values(SLOT_STATES - PAUSED_STATES)


@dataclass
class Template:
    instance_id: str
    contact_id: int


def make_template(relay: Relay) -> Template:
    """One conversation through the API, waiting for a reply with its first message sent."""
    view = relay.start("+19990000000", "Confirm the delivery date", ["Which day suits you?"],
                       heartbeat="1d", max_followups=50, defer=True)
    pulse = Pulse(relay, owner="bench-template")
    while not pulse.run().idle:
        pass
    with relay.store.engine.connect() as conn:
        contact = conn.execute(
            text("SELECT contact_id FROM instances WHERE id = :i"), {"i": view.id}
        ).scalar_one()
    return Template(view.id, int(contact))


def _series(dialect: str, count: int) -> str:
    if dialect == "sqlite":
        return (
            f"WITH RECURSIVE series(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM series "
            f"WHERE n < {count}) "
        )
    return ""


def _from_series(dialect: str, count: int) -> str:
    return "series" if dialect == "sqlite" else f"generate_series(1, {count}) AS series(n)"


def _id_expr(dialect: str, tag: str) -> str:
    """Instance ids: the tag's letter then the number in hex (never a relay-made id shape
    for more than its first character, and unique per tag)."""
    if dialect == "sqlite":
        return f"printf('{tag}%07x', series.n)"
    return f"'{tag}' || lpad(to_hex(series.n), 7, '0')"


def _address_expr(dialect: str, tag: str) -> str:
    code = ord(tag) % 100
    if dialect == "sqlite":
        return f"printf('+1{code:02d}%08d', series.n)"
    return f"'+1{code:02d}' || lpad(series.n::text, 8, '0')"


def _ts(dialect: str, when: datetime | None, step_ms: float = 0.0) -> str:
    """A timestamp column value: ``when`` plus ``n * step_ms`` milliseconds."""
    if when is None:
        return "NULL"
    when = when.astimezone(UTC)
    if dialect == "sqlite":
        base = when.strftime("%Y-%m-%d %H:%M:%S.%f")
        if not step_ms:
            return f"'{base}'"
        return (
            f"strftime('%Y-%m-%d %H:%M:%f', '{base}', "
            f"printf('+%.3f seconds', series.n * {step_ms / 1000.0})) || '000'"
        )
    base = f"TIMESTAMPTZ '{when.isoformat()}'"
    if not step_ms:
        return base
    return f"{base} + series.n * INTERVAL '{step_ms} milliseconds'"


def _clone(conn: Connection, table: str, overrides: dict[str, str], where: str,
           count: int, omit: tuple[str, ...] = ()) -> None:
    dialect = conn.dialect.name
    columns = [c.name for c in metadata.tables[table].columns if c.name not in omit]
    exprs = [overrides.get(c, f't."{c}"') for c in columns]
    quoted = ", ".join(f'"{c}"' for c in columns)
    sql = (
        f"{_series(dialect, count)}INSERT INTO {table} ({quoted}) "
        f"SELECT {', '.join(exprs)} FROM {_from_series(dialect, count)} "
        f"CROSS JOIN {table} AS t WHERE {where}"
    )
    conn.execute(text(sql))


def clone(
    relay: Relay,
    template: Template,
    count: int,
    *,
    tag: str,
    state: str = "WAITING_FOR_REPLY",
    heartbeat_at: datetime | None = None,
    heartbeat_step_ms: float = 0.0,
) -> None:
    """``count`` copies of the template conversation in ``state``; ids ``tag`` + hex.

    Waiting ones get ``heartbeat_at`` (+ ``n * heartbeat_step_ms``) as their next
    heartbeat; terminal ones end COMPLETED with no slot and no heartbeat.
    """
    with relay.store.engine.begin() as conn:
        dialect = conn.dialect.name
        contact_base, seq_base = _bases(conn)
        iid = _id_expr(dialect, tag)
        contact = f"{contact_base} + series.n"
        tid, where_i = template.instance_id, f"t.id = '{template.instance_id}'"
        _clone(conn, "contacts", {"id": contact, "address": _address_expr(dialect, tag)},
               f"t.id = {template.contact_id}", count)
        holds = state in SLOT_HOLDERS
        terminal = state in {"COMPLETED", "ABANDONED", "FAILED"}
        _clone(conn, "instances", {
            "seq": f"{seq_base} + series.n", "id": iid, "contact_id": contact,
            "contact_slot": contact if holds else "NULL", "state": f"'{state}'",
            "next_heartbeat_at": _ts(dialect, heartbeat_at, heartbeat_step_ms)
            if state == "WAITING_FOR_REPLY" else "NULL",
            "ended_at": "t.updated_at" if terminal else "NULL",
            "end_reason": "'bench'" if terminal else "NULL",
        }, where_i, count)
        _clone(conn, "todos", {"instance_id": iid}, f"t.instance_id = '{tid}'", count)
        _clone(conn, "messages", {
            "instance_id": iid, "contact_id": contact,
            "idempotency_key": f"{iid} || '-' || t.id",
            "provider_message_id": "NULL",
        }, f"t.instance_id = '{tid}'", count, omit=("id",))
        # The template's state changes (its rows of the record with a to_state).
        _clone(conn, "events", {"instance_id": iid},
               f"t.instance_id = '{tid}' AND t.to_state IS NOT NULL", count, omit=("id",))
        if dialect == "postgresql":  # explicit ids: move the sequences past them
            for table, column in (("contacts", "id"), ("instances", "seq")):
                conn.execute(text(
                    f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
                    f"(SELECT max({column}) FROM {table}))"))


def _bases(conn: Connection) -> tuple[int, int]:
    contact = conn.execute(text("SELECT max(id) FROM contacts")).scalar() or 0
    seq = conn.execute(text("SELECT max(seq) FROM instances")).scalar() or 0
    return int(contact), int(seq)


def analyze(relay: Relay) -> None:
    with relay.store.engine.connect() as conn:
        conn.execute(text("ANALYZE"))
        conn.commit()


def counts(relay: Relay) -> dict[str, Any]:
    with relay.store.engine.connect() as conn:
        return {
            t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar()
            for t in ("instances", "messages", "events")
        }
