"""Send slots shared by every process on the store (see :class:`SendSlot`).

A send books its slot with one ``UPDATE ... RETURNING``: the row lock (a write
transaction on SQLite, the row's lock on PostgreSQL) makes the read-modify-write
atomic, so two daemons sending from one number get consecutive slots, never
the same one. ``RETURNING`` needs SQLite 3.35 or newer.
"""

from __future__ import annotations

from sqlalchemy import case, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from relay.store.models import SendSlot, table_of


def book(session: Session, channel: str, sender: str, now_us: int, cost_us: int) -> int:
    """Book ``cost_us`` of ``sender``'s time from its next free moment (or ``now_us``,
    if later); returns when the booked slot starts, in microseconds."""
    free = table_of(SendSlot).c.free_at_us
    moved = (
        update(SendSlot)
        .where(SendSlot.channel == channel, SendSlot.sender == sender)
        .values(free_at_us=case((free > now_us, free), else_=now_us) + cost_us)
        .returning(SendSlot.free_at_us)
    )
    end = session.execute(moved).scalar_one_or_none()
    if end is None:
        try:
            with session.begin_nested():
                session.add(SendSlot(channel=channel, sender=sender, free_at_us=now_us + cost_us))
            return now_us
        except IntegrityError:  # another process made the row first: book after it
            end = session.execute(moved).scalar_one()
    return int(end) - cost_us
