"""The daemons table: which daemons run where, when each last pulsed, when it stopped."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Result, Row, delete, func, select, update
from sqlalchemy.orm import Session

from relay.store.database import affected
from relay.store.tables import daemons


def daemon_processes(session: Session) -> Result[str, str, int, datetime | None]:
    """(id, host, pid, stopped_at) of every registered daemon: who may be dead."""
    return session.execute(
        select(daemons.c.id, daemons.c.host, daemons.c.pid, daemons.c.stopped_at)
    )


def record_stop(session: Session, ident: str, now: datetime) -> None:
    session.execute(update(daemons).where(daemons.c.id == ident).values(stopped_at=now))


def record_pulse(session: Session, ident: str, now: datetime) -> None:
    session.execute(update(daemons).where(daemons.c.id == ident).values(last_pulse_at=now))


def delete_silent(session: Session, cutoff: datetime) -> int:
    """Forget daemons that have not pulsed since ``cutoff`` (so ``relay status`` stays short)."""
    return affected(session.execute(delete(daemons).where(daemons.c.last_pulse_at < cutoff)))


def live_daemons(session: Session, pulsed_since: datetime) -> Sequence[Row[Any]]:
    """Daemons not stopped that pulsed at or after ``pulsed_since``, oldest first."""
    return session.execute(
        select(daemons)
        .where(daemons.c.stopped_at.is_(None), daemons.c.last_pulse_at >= pulsed_since)
        .order_by(daemons.c.started_at)
    ).all()


def last_pulse(session: Session) -> datetime | None:
    """When any daemon last pulsed."""
    return session.scalar(select(func.max(daemons.c.last_pulse_at)))
