"""Named queries for what channels bring in: each channel's read position, the
messages a provider id names, and the conversation an inbound message belongs
to (by its thread first, then by its contact), and what came in that no
conversation took.

Apart from :mod:`relay.store.queries` because only the inbound side (polling,
``relay serve``, receipts) asks them. As there, what a caller changes is a
mapped object (the models imported where they run); the counts are Core.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from relay.core.states import State
from relay.core.values import Direction, MessageStatus
from relay.store import messages as store_messages
from relay.store.tables import channel_cursors, inbound_rejects, instances, messages

if TYPE_CHECKING:
    from relay.store.models import Instance, Message


def channel_cursor(session: Session, channel: str) -> str | None:
    return session.scalar(
        select(channel_cursors.c.position).where(channel_cursors.c.channel == channel)
    )


def lock_channel(session: Session, channel: str) -> None:
    """Serialise the transactions that store what ``channel`` brought in.

    Several daemons poll one channel from the same stored position and read the
    same messages; de-duplication by provider id makes that harmless only if each
    sees what the other stored. Under READ COMMITTED it does not (neither sees the
    other's uncommitted rows, and both insert), so each takes this lock first: the
    second waits for the first to commit, then finds its rows. A transaction-scoped
    advisory lock, since a channel has no row to lock before its first position is
    stored. On SQLite every transaction already holds the database's write lock.
    """
    if session.get_bind().dialect.name == "postgresql":
        session.execute(
            select(func.pg_advisory_xact_lock(func.hashtext(f"relay.channel:{channel}")))
        )


def advance_cursor(
    session: Session, channel: str, *, read: str | None, position: str, now: datetime
) -> bool:
    """Move ``channel``'s position from ``read`` (what the poll started from) to
    ``position``, in the caller's transaction; False when another poller moved it
    meanwhile (what it read is stored by then, so ours are duplicates at worst)."""
    from relay.store.models import ChannelCursor

    row = session.scalar(
        select(ChannelCursor).where(ChannelCursor.channel == channel).with_for_update()
    )
    if row is None:
        if read is not None:
            return False
        try:
            with session.begin_nested():
                session.add(ChannelCursor(channel=channel, position=position, updated_at=now))
                session.flush()
        except IntegrityError:
            return False  # another poller stored the first position first
        return True
    if row.position != read:
        return False
    row.position = position
    row.updated_at = now
    return True


def inbound_by_provider_id(session: Session, channel: str, provider_id: str) -> Message | None:
    return session.scalar(_by_provider_id(channel, provider_id, Direction.INBOUND))


def outbound_by_provider_id(session: Session, channel: str, provider_id: str) -> Message | None:
    """Locked: a receipt changes the message it is about."""
    return session.scalar(
        _by_provider_id(channel, provider_id, Direction.OUTBOUND).with_for_update()
    )


def _by_provider_id(channel: str, provider_id: str, direction: Direction) -> Select[Any]:
    from relay.store.models import Message

    return (
        select(Message)
        .where(
            Message.channel == channel,
            Message.provider_message_id == provider_id,
            Message.direction == direction.value,
        )
        .limit(1)
    )


def instance_answered_by(session: Session, provider_ids: Sequence[str]) -> str | None:
    """The conversation of the newest message among ``provider_ids`` (a reply's
    In-Reply-To and References), if relay knows any of them."""
    if not provider_ids:
        return None
    return session.scalar(
        select(messages.c.instance_id)
        .where(
            messages.c.provider_message_id.in_(provider_ids),
            messages.c.instance_id.is_not(None),
        )
        .order_by(messages.c.id.desc())
        .limit(1)
    )


def latest_instance(session: Session, contact_id: int) -> Instance | None:
    from relay.store.models import Instance

    return session.scalar(
        select(Instance)
        .where(Instance.contact_id == contact_id)
        .order_by(Instance.seq.desc())
        .limit(1)
        .with_for_update()
    )


# -- inbound nobody took -----------------------------------------------------------------


def late_replies(session: Session, instance_id: str) -> int:
    """Inbound on an ended conversation that nobody has looked at."""
    return store_messages.count(
        session,
        instance_id,
        messages.c.direction == Direction.INBOUND.value,
        messages.c.status == MessageStatus.RECEIVED.value,
    )


def inbound_trouble(session: Session) -> tuple[int, int]:
    """(inbound waiting on ended conversations, inbound kept aside as unusable)."""
    terminal = [s.value for s in State if s.terminal]
    late = session.scalar(
        select(func.count())
        .select_from(messages)
        .join(instances, instances.c.id == messages.c.instance_id)
        .where(
            messages.c.direction == Direction.INBOUND.value,
            messages.c.status == MessageStatus.RECEIVED.value,
            instances.c.state.in_(terminal),
        )
    )
    rejected = session.scalar(select(func.count()).select_from(inbound_rejects))
    return int(late or 0), int(rejected or 0)
