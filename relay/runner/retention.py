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

from sqlalchemy import delete, select, update

from relay.core.values import MessageStatus
from relay.store.database import affected
from relay.store.models import Daemon, Instance, Message

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
            done = session.execute(
                update(Message)
                .where(
                    Message.status == MessageStatus.SENT.value,
                    Message.sent_at < cutoff,
                    Message.idempotency_key.is_not(None),
                )
                .values(idempotency_key=None, last_error=None, next_attempt_at=None)
            )
            result["outbox_pruned"] = affected(done)
            gone = session.execute(delete(Daemon).where(Daemon.last_pulse_at < cutoff))
            result["daemons_pruned"] = affected(gone)
        if transcript_days > 0:
            cutoff = now - timedelta(days=transcript_days)
            ended = select(Instance.id).where(Instance.ended_at < cutoff)
            # A reply that came after the end and nobody has looked at yet stays.
            done = session.execute(
                delete(Message).where(
                    Message.instance_id.in_(ended),
                    Message.status != MessageStatus.RECEIVED.value,
                )
            )
            result["transcript_messages_deleted"] = affected(done)
    return result
