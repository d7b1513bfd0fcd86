"""The daemon's side of ``relay serve``: what the server stored as it came
(:mod:`relay.runner.serve_writer`) becomes transcript rows, opt-outs and
receipts here, by the same :func:`relay.engine.verbs.incoming.ingest` a poll
uses, the pushes deleted in that transaction. A push whose JSON cannot be read is kept aside as a
rejected arrival (``relay inbox --kind rejected``), never left to block the rest.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING

from relay.channels import pushed
from relay.channels.base import Inbound, Incoming, Receipt, Rejected
from relay.engine.verbs import incoming
from relay.store import failures, pushes

if TYPE_CHECKING:
    from relay.engine.runtime import Runtime

log = logging.getLogger("relay.daemon")


def take_pushes(relay: Runtime, limit: int) -> int:
    """Ingest up to ``limit`` stored pushes, oldest first, one transaction per
    channel; how many were taken (by this process)."""
    with relay.store.read_transaction() as session:
        rows = pushes.waiting(session, limit)
    by_channel: dict[str, list[tuple[int, str]]] = {}
    for push_id, channel, text in rows:
        by_channel.setdefault(channel, []).append((push_id, text))
    taken = 0
    for channel, items in by_channel.items():
        ids = [push_id for push_id, _ in items]
        try:
            taking = partial(pushes.take, ids=ids)
            incoming.ingest(relay, channel, _merged(items), taking=taking)
        except failures.Taken:
            log.debug("pushes on %s taken by another daemon", channel)
            continue
        taken += len(ids)
    return taken


def take_all(relay: Runtime, limit: int) -> int:
    """Take batches of ``limit`` until none is left; how many were taken."""
    total = 0
    while True:
        taken = take_pushes(relay, limit)
        total += taken
        if taken < limit:
            return total


def _merged(items: list[tuple[int, str]]) -> Incoming:
    """One :class:`Incoming` of the pushes' messages and receipts, in their order."""
    messages: list[Inbound] = []
    receipts: list[Receipt] = []
    rejected: list[Rejected] = []
    for push_id, text in items:
        try:
            incoming = pushed.loads(text)
        except (ValueError, TypeError, KeyError) as exc:
            reason = f"push {push_id} unreadable: {type(exc).__name__}: {exc}"
            rejected.append(Rejected(reason=reason[:500], raw=text))
            continue
        messages.extend(incoming.messages)
        receipts.extend(incoming.receipts)
    return Incoming(messages=messages, receipts=receipts, rejected=rejected)
