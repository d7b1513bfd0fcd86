"""Contact aliases: the address a contact has on one channel (a bound Telegram chat)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from relay.store.hotpath import prepared
from relay.store.hotpath.among import among_param
from relay.store.hotpath.prepared import per_dialect
from relay.store.models import ContactAlias

if TYPE_CHECKING:
    from relay.store.hotpath.prepared import AnySelect


def contact_for(session: Session, channel: str, address: str) -> int | None:
    """The contact a chat on ``channel`` is bound to, if any."""
    query = select(ContactAlias.contact_id).where(
        ContactAlias.channel == channel, ContactAlias.address == address
    )
    return session.scalar(query)


def address_for(session: Session, channel: str, contact_id: int) -> str | None:
    query = select(ContactAlias.address).where(
        ContactAlias.channel == channel, ContactAlias.contact_id == contact_id
    )
    return session.scalar(query)


def addresses_for(session: Session, pairs: Iterable[tuple[str, int]]) -> dict[tuple[str, int], str]:
    """``{(channel, contact id): address}`` for a dispatcher's batch, in one query
    by the primary key's contact part (portable where row-value IN is not)."""
    wanted = set(pairs)
    if not wanted:
        return {}
    found = prepared.batch(session, _aliases_of, sorted({i for _, i in wanted}))
    return {(c, i): a for c, i, a in found if (c, i) in wanted}


@per_dialect
def _aliases_of(dialect: str) -> AnySelect:
    return select(ContactAlias.channel, ContactAlias.contact_id, ContactAlias.address).where(
        among_param(dialect, ContactAlias.contact_id, "ids")
    )


def bind(session: Session, channel: str, contact_id: int, address: str, now: datetime) -> None:
    """Bind ``address`` on ``channel`` to the contact, replacing the contact's
    earlier chat there and the chat's earlier contact (the newest ``/start`` wins)."""
    session.execute(
        delete(ContactAlias).where(
            ContactAlias.channel == channel,
            (ContactAlias.contact_id == contact_id) | (ContactAlias.address == address),
        )
    )
    session.add(
        ContactAlias(channel=channel, contact_id=contact_id, address=address, created_at=now)
    )
    session.flush()
