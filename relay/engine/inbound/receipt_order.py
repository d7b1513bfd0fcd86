"""Receipts in the order their statuses allow (:mod:`relay.core.receipts`), on the
message row: out of order or repeated ones are kept out, logged."""

from __future__ import annotations

import logging
from datetime import datetime

from relay.core import receipts
from relay.core.values import DeliveryStatus, MessageStatus
from relay.store.models import Message

log = logging.getLogger("relay.inbound")


def record(message: Message, status: DeliveryStatus, at: datetime | None, now: datetime) -> bool:
    """Record ``status`` on ``message`` if it moves it forward; False if it does not.

    ``at``: the provider's own time for it (None: it states none; ``now`` is kept)."""
    current = DeliveryStatus(message.delivery_status) if message.delivery_status else None
    recorded = message.delivery_updated_at
    later = at is not None and (recorded is None or at > recorded)
    if not receipts.moves(current, status, stated_later=later):
        log.info("receipt %s for message %s kept out: it is %s", status, message.id, current)
        return False
    message.delivery_status = status.value
    message.delivery_updated_at = at or now
    if current is not None and current.failed and not status.failed:
        message.status = MessageStatus.SENT.value  # the provider says it arrived after all
    return True
