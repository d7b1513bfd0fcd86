"""Whether a delivery receipt moves a message's delivery status.

Providers send receipts out of order and more than once (Twilio retries a
status callback; "delivered" can arrive before "sent"). A status never moves
backwards: ``sent`` < ``delivered`` < ``read``. A failure (``undelivered``,
``failed``, ``bounced``) is final, unless the provider itself states a later
time for a success (a receipt whose time is the provider's, not its arrival).
"""

from __future__ import annotations

from relay.core.values import DeliveryStatus

PROGRESS = {DeliveryStatus.SENT: 1, DeliveryStatus.DELIVERED: 2, DeliveryStatus.READ: 3}


def moves(current: DeliveryStatus | None, new: DeliveryStatus, *, stated_later: bool) -> bool:
    """True when a receipt saying ``new`` should replace ``current``.

    ``stated_later``: the receipt carries the provider's own time, later than
    the one the current status was recorded with.
    """
    if current is None:
        return True
    if current.failed:
        return not new.failed and stated_later
    if new.failed:
        return True
    return PROGRESS[new] > PROGRESS[current]
