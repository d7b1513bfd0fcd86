"""A conversation's (an instance's) reads: by id or id prefix (as a Core row to
read, or its mapped object for a command that changes it), the newest-first
listing, and who holds a contact's slot and who waits in its queue. The reads
return Core rows where they can, so a read command loads no mapped class."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from sqlalchemy import Row, and_, exists, or_, select
from sqlalchemy.orm import Session

from relay.core.errors import Ambiguous, NotFound
from relay.core.states import PAUSED_STATES, QUEUED_STATE, QUEUED_STATES, values
from relay.store.tables import contact_addresses, contacts, instances

if TYPE_CHECKING:
    from relay.store.models import Instance


class _Identified(Protocol):
    @property
    def id(self) -> str: ...


Found = TypeVar("Found", bound=_Identified)


def row(session: Session, prefix: str) -> Row[Any]:
    """The instance whose id starts with ``prefix``, to read (see :func:`_resolve`);
    :func:`resolve` gives a command its mapped object."""

    def matching(where: Any) -> Sequence[Row[Any]]:
        return session.execute(_first_two(select(instances), where)).all()

    return _resolve(prefix, matching)


def _resolve(prefix: str, matching: Callable[[Any], Sequence[Found]]) -> Found:
    """The one instance ``matching`` (a query run with this condition) finds for an
    exact id, else for ``prefix``; unknown or ambiguous is an error.

    An exact id is one unique-index lookup; a prefix is a range on the same index
    (``id >= prefix AND id < next``), never a ``LIKE`` that scans the table.
    """
    cleaned = prefix.strip().lower()
    if not cleaned:
        raise NotFound("no instance id given")
    exact = matching(instances.c.id == cleaned)
    if exact:
        return exact[0]
    found = [i for i in matching(_prefix_condition(cleaned)) if i.id.startswith(cleaned)]
    if not found:
        raise NotFound(f"no instance matches {prefix!r}")
    if len(found) > 1:
        raise Ambiguous(f"instance id {prefix!r} is ambiguous; type more characters")
    return found[0]


def _first_two(query: Any, where: Any) -> Any:
    """Enough of what matches to tell one from several, in id order."""
    return query.where(where).order_by(instances.c.id).limit(2)


#: Characters an instance id may hold, in the order every collation sorts them.
_ID_CHARS = "0123456789abcdefghijklmnopqrstuvwxyz"


def _prefix_condition(prefix: str) -> Any:
    """``id`` starts with ``prefix``, as a range the unique index answers.

    Ids are lower-case letters and digits, which binary (SQLite) and linguistic
    (PostgreSQL's default) collations order alike, so the upper bound is the prefix
    with its last character moved one up that alphabet. Anything else falls back
    to ``LIKE`` (nothing relay made can match it).
    """
    if not all(ch in _ID_CHARS for ch in prefix):
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        return instances.c.id.like(escaped + "%", escape="\\")
    stem = prefix.rstrip(_ID_CHARS[-1])
    if not stem:
        return instances.c.id >= prefix
    upper = stem[:-1] + _ID_CHARS[_ID_CHARS.index(stem[-1]) + 1]
    return and_(instances.c.id >= prefix, instances.c.id < upper)


def by_id(session: Session, instance_id: str) -> Instance | None:
    """The instance with exactly this id, or None (its mapped object, to change)."""
    from relay.store.models import Instance

    return session.scalar(select(Instance).where(Instance.id == instance_id))


def state_of(session: Session, instance_id: str) -> str | None:
    return session.scalar(select(instances.c.state).where(instances.c.id == instance_id))


def newest(
    session: Session,
    *,
    state: str | None,
    address: str | None,
    campaign: str | None,
    limit: int,
) -> Sequence[Row[Any]]:
    """Instances newest first, each row with its contact's ``address``, filtered by
    state value, contact address and campaign when given."""
    query = select(instances, contacts.c.address).join(
        contacts, contacts.c.id == instances.c.contact_id
    )
    if state:
        query = query.where(instances.c.state == state)
    if address:  # the contact's own address, or another of its addresses
        others = select(contact_addresses.c.contact_id).where(
            contact_addresses.c.address == address
        )
        query = query.where(or_(contacts.c.address == address, contacts.c.id.in_(others)))
    if campaign:
        query = query.where(instances.c.campaign == campaign)
    query = query.order_by(instances.c.seq.desc()).limit(limit)
    return session.execute(query).all()


def resolve(session: Session, prefix: str, *, lock: bool = False) -> Instance:
    """The instance whose id starts with ``prefix``, for a command that changes it
    (``lock``: its row lock); unknown or ambiguous is an error (see
    :func:`_resolve`)."""
    from relay.store.models import Instance

    def matching(where: Any) -> Sequence[Instance]:
        query = _first_two(select(Instance), where)
        return session.scalars(query.with_for_update() if lock else query).all()

    return _resolve(prefix, matching)


def slot_holder(session: Session, contact_id: int, *, lock: bool = False) -> Instance | None:
    """The instance holding the contact's slot; ``lock`` takes its row lock and
    re-reads it, so a decision based on its state cannot race a concurrent event
    (a heartbeat firing while a reply arrives)."""
    from relay.store.models import Instance

    query = select(Instance).where(Instance.contact_slot == contact_id)
    if lock:
        query = query.with_for_update().execution_options(populate_existing=True)
    return session.scalar(query)


def oldest_queued(session: Session, contact_id: int) -> Instance | None:
    """The next instance in the contact's FIFO (paused queued ones keep their place
    without blocking)."""
    from relay.store.models import Instance

    return session.scalar(
        select(Instance)
        .where(Instance.contact_id == contact_id, Instance.state == QUEUED_STATE.value)
        .order_by(Instance.seq)
        .limit(1)
        .with_for_update()
    )


def queued(session: Session, contact_id: int) -> Sequence[Instance]:
    """Instances waiting for the contact's slot, paused or not, oldest first."""
    from relay.store.models import Instance

    return session.scalars(
        select(Instance)
        .where(Instance.contact_id == contact_id, Instance.contact_slot.is_(None))
        .where(Instance.state.in_(sorted(values(QUEUED_STATES | PAUSED_STATES))))
        .order_by(Instance.seq)
    ).all()


def slot_holder_id(session: Session, contact_id: int) -> str | None:
    """The id of the instance holding the contact's slot, to read."""
    return session.scalar(select(instances.c.id).where(instances.c.contact_slot == contact_id))


def stranded_queues(session: Session) -> list[int]:
    """Contacts with a QUEUED conversation and no conversation holding their slot."""
    holder = instances.alias()
    return list(
        session.scalars(
            select(instances.c.contact_id)
            .where(
                instances.c.state == QUEUED_STATE.value,
                ~exists().where(holder.c.contact_slot == instances.c.contact_id),
            )
            .distinct()
        )
    )


def by_ids(session: Session, instance_ids: Sequence[str]) -> Sequence[Instance]:
    """Instances by exact id, in the order given (unknown ids are left out)."""
    from relay.store.models import Instance

    if not instance_ids:
        return []
    found = {
        i.id: i for i in session.scalars(select(Instance).where(Instance.id.in_(instance_ids)))
    }
    return [found[i] for i in instance_ids if i in found]
