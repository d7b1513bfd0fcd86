"""Retention: what the daemon's maintenance job prunes.

* Delivery bookkeeping of messages sent more than ``retention.outbox_days``
  ago: their idempotency keys and errors are cleared (they will never be
  retried); the transcript text stays.
* When ``retention.transcript_days`` is above zero, the transcripts of
  conversations that ended more than that many days ago are deleted, except
  replies that arrived after the end and were not looked at yet. The
  transition log and the instance row stay, so history and statistics remain.
* Rows of daemons that stopped (or stopped pulsing) more than
  ``retention.outbox_days`` ago, so ``relay status`` stays short.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from relay.store import daemons
from relay.store import retention as pruning

if TYPE_CHECKING:
    from relay.engine.runtime import Runtime


def prune(relay: Runtime) -> dict[str, int]:
    now = relay.now()
    outbox_days = relay.config.settings.retention.outbox_days
    transcript_days = relay.config.settings.retention.transcript_days
    result = {"outbox_pruned": 0, "transcript_messages_deleted": 0, "daemons_pruned": 0}
    with relay.store.transaction() as session:
        if outbox_days > 0:
            cutoff = now - timedelta(days=outbox_days)
            result["outbox_pruned"] = pruning.forget_delivery_bookkeeping(session, cutoff)
            result["daemons_pruned"] = daemons.delete_silent(session, cutoff)
        if transcript_days > 0:
            cutoff = now - timedelta(days=transcript_days)
            deleted = pruning.delete_ended_transcripts(session, cutoff)
            result["transcript_messages_deleted"] = deleted
    return result
