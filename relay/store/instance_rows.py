"""Single-instance reads (by id or id prefix) and the newest-first listing of
conversations, as Core rows (a read command loads no mapped class)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from sqlalchemy import Row, and_, or_, select
from sqlalchemy.orm import Session

from relay.core.errors import Ambiguous, NotFound
from relay.store.tables import contact_addresses, contacts, instances

if TYPE_CHECKING:
    from relay.store.models import Instance


class _Identified(Protocol):
    @property
    def id(self) -> str: ...


Found = TypeVar("Found", bound=_Identified)


def instance_row(session: Session, prefix: str) -> Row[Any]:
    """The instance whose id starts with ``prefix``, to read (see :func:`resolve`);
    :func:`relay.store.queries.resolve_instance` gives a command its mapped object."""

    def matching(where: Any) -> Sequence[Row[Any]]:
        return session.execute(first_two(select(instances), where)).all()

    return resolve(prefix, matching)


def resolve(prefix: str, matching: Callable[[Any], Sequence[Found]]) -> Found:
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


def first_two(query: Any, where: Any) -> Any:
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


def instance_by_id(session: Session, instance_id: str) -> Instance | None:
    """The instance with exactly this id, or None (its mapped object, to change)."""
    from relay.store.models import Instance

    return session.scalar(select(Instance).where(Instance.id == instance_id))


def state_of(session: Session, instance_id: str) -> str | None:
    return session.scalar(select(instances.c.state).where(instances.c.id == instance_id))


def newest_instances(
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
