"""What the outbox's screen (``relay.engine.outbox.screen``) reads before a send: the
contacts, the conversations and the newest inbound of a batch of messages."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from relay.core.values import Direction
from relay.store.hotpath import prepared
from relay.store.hotpath.among import among_param
from relay.store.hotpath.prepared import per_dialect
from relay.store.models import Contact, Instance, Message

if TYPE_CHECKING:
    from relay.store.hotpath.prepared import AnySelect


def contact_facts(session: Session, contact_ids: Collection[int]) -> dict[int, Any]:
    """Whether each contact may be written to, and when (opt-out, bad address, zone)."""
    return {row.id: row for row in prepared.batch(session, _contact_facts, contact_ids)}


@per_dialect
def _contact_facts(dialect: str) -> AnySelect:
    return select(
        Contact.id,
        Contact.address,
        Contact.kind,
        Contact.opted_out_at,
        Contact.undeliverable_reason,
        Contact.timezone,
        Contact.last_inbound_at,
    ).where(among_param(dialect, Contact.id, "ids"))


def instance_facts(session: Session, instance_ids: Collection[str]) -> dict[str, Any]:
    """Each conversation's state and what its sending window and template need."""
    return {row.id: row for row in prepared.batch(session, _instance_facts, instance_ids)}


@per_dialect
def _instance_facts(dialect: str) -> AnySelect:
    return select(
        Instance.id,
        Instance.state,
        Instance.previous_state,
        Instance.subject,
        Instance.window,
        Instance.template,
        Instance.first_delivered_at,
        Instance.ladder,
    ).where(among_param(dialect, Instance.id, "ids"))


def last_inbound_ids(session: Session, instance_ids: Collection[str]) -> dict[str, int]:
    """The newest inbound message id per conversation (a proactive message older
    than it is superseded)."""
    found = prepared.batch(session, _last_inbound, instance_ids)
    return {str(i): int(n) for i, n in found}


@per_dialect
def _last_inbound(dialect: str) -> AnySelect:
    return (
        select(Message.instance_id, func.max(Message.id))
        .where(
            among_param(dialect, Message.instance_id, "ids"),
            Message.direction == Direction.INBOUND.value,
        )
        .group_by(Message.instance_id)
    )
