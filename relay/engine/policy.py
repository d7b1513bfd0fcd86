"""Where configuration meets an instance: its sending window and time zone."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from sqlalchemy.orm import Session

from relay.config import Config
from relay.core.windows import Window, next_open, parse_window, zone
from relay.store.locked_rows import InstanceFields
from relay.store.models import Contact


def window_of(instance: InstanceFields, config: Config) -> Window | None:
    spec = instance.window or config.settings.defaults.window or ""
    return parse_window(spec) if spec.strip() else None


def zone_of(contact: Contact, config: Config) -> ZoneInfo:
    return zone(contact.timezone or config.settings.defaults.timezone)


def next_window_open(
    session: Session, instance: InstanceFields, config: Config, now: datetime
) -> datetime:
    """``now`` if proactive messages may go to this instance's contact now, else when they may."""
    window = window_of(instance, config)
    if window is None:
        return now
    contact = session.get(Contact, instance.contact_id)
    assert contact is not None
    return next_open(window, now, zone_of(contact, config))
