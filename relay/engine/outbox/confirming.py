"""Confirming a group of claimed messages just before its sends.

A batch is delivered one message after another; when the channel is slow, the
lease on rows further down can run out and another worker claims them again
(its claim counts one more attempt). Those are its to send now. The lease is
renewed for the send itself, and the opt-out is checked again, at delivery time
rather than when the batch was claimed.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from relay.channels.base import Outbound
from relay.engine.outbox import gate
from relay.engine.outbox import outcomes as delivery_outcomes
from relay.engine.outbox.outcomes import DeliveryReport
from relay.store import claims, locked_rows

if TYPE_CHECKING:
    from datetime import timedelta

    from relay.engine.runtime import Runtime

log = logging.getLogger("relay.outbox")


def confirm(
    relay: Runtime,
    group: list[tuple[Outbound, str]],
    claimed: dict[int, int],
    lease: timedelta,
    report: DeliveryReport,
    stalled: set[str],
) -> list[tuple[Outbound, str]]:
    """The messages of ``group`` still ours (``claimed``: the attempt each claim
    counted) that may still go, their leases renewed for ``lease``. Those ruled
    out are recorded; the conversations of those taken over join ``stalled``."""
    confirmed = []
    with relay.store.transaction() as session:
        ids = [o.message_id for o, _ in group]
        # Instances first, then messages: the order every command locks in.
        owners = sorted({o.instance_id for o, _ in group if o.instance_id})
        claims.lock_instance_rows(session, owners)
        locked = claims.lock_messages(session, ids)
        facts = gate.Facts.read(session, locked.values())
        renewed = relay.now() + lease
        for outbound, channel_name in group:
            message = locked.get(outbound.message_id)
            if message is None or not claims.still_leased(message, claimed[outbound.message_id]):
                log.info("message %s was taken over by another worker", outbound.message_id)
                if outbound.instance_id:
                    stalled.add(outbound.instance_id)
                continue
            ruling = gate.rule(message, facts)
            if ruling.verdict is not gate.Verdict.GO:
                delivery_outcomes.rule_out(session, message, ruling, report)
                continue
            message.next_attempt_at = renewed
            confirmed.append((outbound, channel_name))
        locked_rows.write(session, locked.values())
    return confirmed
