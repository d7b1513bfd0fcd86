"""What a batch of claimed turns is read from: plain rows, no ORM objects."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Result, select
from sqlalchemy.orm import Session

from relay.store.among import among
from relay.store.models import Contact, Instance

#: The instance columns a turn's context is built from.
_CONTEXT_INSTANCE = (
    Instance.id,
    Instance.state,
    Instance.version,
    Instance.lease_owner,
    Instance.contact_id,
    Instance.objective,
    Instance.agent,
    Instance.turn_attempts,
    Instance.follow_up_count,
    Instance.max_followups,
    Instance.result_schema,
    Instance.campaign,
)


def context_rows(session: Session, instance_ids: Iterable[str]) -> Result[Any]:
    """The instances' context columns with their contact's address and fields: plain
    rows, since nothing read for a turn's context is changed (ORM objects for a
    batch cost more than the SQL)."""
    return session.execute(
        select(*_CONTEXT_INSTANCE, Contact.address, Contact.fields)
        .join(Contact, Contact.id == Instance.contact_id)
        .where(among(session, Instance.id, instance_ids))
    )
