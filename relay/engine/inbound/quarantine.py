"""No poison pill: what arrives is stored, cleaned, or kept aside with the reason.

Everything an arrival carries is made storable first (:mod:`relay.core.storable`:
no NUL, no lone surrogate, a provider id a column holds), so the usual case stores
in one transaction as before. Should storing still fail for a reason that is about
the data (not the database being away), :func:`relay.engine.verbs.incoming.ingest` stores the batch
again item by item, each in a savepoint: an item that fails again is recorded as
a rejected arrival (``relay inbox --kind rejected``) with the reason, in the same
transaction that moves the channel's position past it, and the items after it are
stored as usual.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import TypeVar

from sqlalchemy.orm import Session

from relay.channels.base import Inbound, Receipt, Rejected
from relay.core.storable import storable, storable_or_none
from relay.store import failures
from relay.store.models import InboundReject

log = logging.getLogger("relay.inbound")

#: Inbound text longer than this is cut (and the cut noted on the row): an email
#: with its whole quoted history can be long, but never needs to be unbounded.
MAX_INBOUND = 100_000
#: ``messages.provider_message_id`` is a VARCHAR(255).
MAX_PROVIDER_ID = 255
MAX_SENDER = 1000
MAX_REJECTED = 1_100_000

T = TypeVar("T")


def provider_id(value: str | None) -> str | None:
    """A provider id a column holds: cleaned, and a long one cut with a digest of the
    whole (so that two long ids never become one)."""
    if value is None:
        return None
    value = storable(value)
    if len(value) <= MAX_PROVIDER_ID:
        return value
    digest = hashlib.sha256(value.encode("utf-8")).hexdigest()[:32]
    return f"{value[: MAX_PROVIDER_ID - 34]}#{digest}"


def clean(item: Inbound) -> Inbound:
    """``item`` with every text a column can hold (the raw message kept as it came)."""
    return replace(
        item,
        sender=storable(item.sender),
        text=storable(item.text),
        provider_message_id=provider_id(item.provider_message_id),
        references=tuple(r for r in (provider_id(r) for r in item.references) if r),
        raw=storable_or_none(item.raw),
        bind_token=storable_or_none(item.bind_token),
    )


def clean_receipt(receipt: Receipt) -> Receipt:
    return replace(
        receipt,
        provider_message_id=provider_id(receipt.provider_message_id) or "",
        error=storable_or_none(receipt.error),
    )


def record(session: Session, channel: str, item: Rejected, now: datetime) -> None:
    """Keep ``item`` aside as a rejected arrival, with its reason."""
    session.add(
        InboundReject(
            channel=channel,
            sender=storable(item.sender)[:MAX_SENDER] or "unknown",
            body=storable(item.raw)[:MAX_REJECTED],
            provider_message_id=provider_id(item.provider_message_id),
            error=storable(item.reason)[:2000],
            created_at=now,
        )
    )
    log.warning("inbound on %s kept aside: %s", channel, item.reason)


def of_inbound(item: Inbound, exc: BaseException) -> Rejected:
    return Rejected(
        reason=f"could not be stored: {failures.kind(exc)}: {_short(exc)}",
        raw=item.raw or item.text,
        sender=item.sender,
        provider_message_id=item.provider_message_id,
    )


def of_receipt(receipt: Receipt, exc: BaseException) -> Rejected:
    return Rejected(
        reason=f"receipt ({receipt.status}) could not be stored: {failures.kind(exc)}: "
        f"{_short(exc)}",
        raw=repr(receipt),
        provider_message_id=receipt.provider_message_id,
    )


def isolated(
    session: Session,
    step: Callable[[], T],
    rejected: Callable[[BaseException], Rejected],
    careful: bool,
    channel: str,
    now: datetime,
) -> tuple[T | None, bool]:
    """Run ``step``: (its result, True). ``careful``: in a savepoint, and when it
    fails for a reason that is about the data, (None, False) with the item kept
    aside; an outage or a lock is raised (nothing is kept aside for it)."""
    if not careful:
        return step(), True
    try:
        with session.begin_nested():
            return step(), True
    except Exception as exc:
        if failures.is_transient(exc):
            raise
        record(session, channel, rejected(exc), now)
        return None, False


def reject_sender(session: Session, channel: str, item: Inbound, error: str, now: datetime) -> None:
    """A sender that is no address cannot become a contact: kept aside, logged, counted."""
    body, _ = bounded(item.text)
    session.add(
        InboundReject(
            channel=channel,
            sender=item.sender[:1000],
            body=body,
            provider_message_id=item.provider_message_id,
            error=error,
            created_at=now,
        )
    )
    log.warning("inbound on %s from an unusable sender kept aside: %s", channel, error)


def bounded(text: str) -> tuple[str, str | None]:
    """The text a row can hold (PostgreSQL text cannot hold NUL) and what was done to it."""
    body = (text or "").replace("\x00", "")
    if len(body) > MAX_INBOUND:
        return body[:MAX_INBOUND], f"truncated from {len(body)} characters"
    if not body.strip():
        return body, "empty message"
    return body, None


def _short(exc: BaseException) -> str:
    text = " ".join(str(getattr(exc, "orig", None) or exc).split())
    return text[:300] or type(exc).__name__
