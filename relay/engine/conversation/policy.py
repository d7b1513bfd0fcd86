"""Where configuration meets an instance: its sending window and time zone."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from sqlalchemy import Row
from sqlalchemy.orm import Session

from relay.config import Config
from relay.core.windows import Window, next_open, parse_window, zone
from relay.store import contact_rows

if TYPE_CHECKING:
    from relay.store.locked_rows import InstanceFields


def window_of(instance: InstanceFields | Row[Any], config: Config) -> Window | None:
    spec = instance.window or config.settings.defaults.window or ""
    return parse_window(spec) if spec.strip() else None


def zone_of(timezone: str | None, config: Config) -> ZoneInfo:
    return zone(timezone or config.settings.defaults.timezone)


def next_window_open(
    session: Session, instance: InstanceFields | Row[Any], config: Config, now: datetime
) -> datetime:
    """``now`` if proactive messages may go to this instance's contact now, else when they may."""
    window = window_of(instance, config)
    if window is None:
        return now
    timezone = contact_rows.timezone_of(session, instance.contact_id)
    return next_open(window, now, zone_of(timezone, config))
