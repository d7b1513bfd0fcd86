"""What arrives: an inbound message given by hand (``relay receive``), and a
channel's batch (a poll or a pushed request) stored with its read position (the
positions themselves are read and moved in :mod:`relay.engine.runtime`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from relay.core.errors import InvalidInput
from relay.engine.contacts.addresses import address_for
from relay.engine.runtime import Runtime
from relay.engine.views.instances import MessageView
from relay.store import arrivals, on_commit

if TYPE_CHECKING:
    from collections.abc import Callable

    from sqlalchemy.orm import Session

    from relay.channels.base import Incoming
    from relay.engine.contacts.bounce_marks import SoftBounces
    from relay.engine.inbound import ingest as inbound

#: :func:`ingest` without a poll position (a pushed request).
UNREAD = object()

log = logging.getLogger("relay.service")


def receive(
    rt: Runtime,
    contact: str,
    text: str,
    *,
    channel: str = "cli",
    provider_message_id: str | None = None,
) -> MessageView:
    """Store an inbound message at once and route it to the contact's live instance.

    A message a channel delivers twice (same ``provider_message_id`` on the
    same channel) is recorded once; the second call returns the first row.
    The text is taken as a channel takes it: longer than
    :data:`~relay.engine.inbound.ingest.MAX_INBOUND` it is cut, with a note on the row.
    """
    from relay.engine.contacts import settling
    from relay.engine.contacts.optouts import NEWLY_OUT
    from relay.engine.inbound import ingest as inbound

    address = address_for(rt, contact)
    body = (text or "").replace("\x00", "").strip()
    if not body:
        raise InvalidInput("message must not be empty")
    words, intent = keywords(rt), None
    if rt.config.settings.intent.enabled:  # asked before the transaction opens
        from relay.engine.verbs import intents

        intent = intents.label_of(rt, body, words)
    arrival = inbound.Arrival(address, body, channel, provider_message_id, intent=intent)
    with rt.store.transaction() as session:
        message = inbound.store_arrival(session, arrival, rt.now(), keywords=words)
        if message is None:
            assert provider_message_id is not None
            message = arrivals.inbound_by_provider_id(session, channel, provider_message_id)
            assert message is not None
        view = MessageView.build(message, address.value)
        opted_out = on_commit.collected(session, NEWLY_OUT)
    # Committed: a STOP is acknowledged once the sends under way have settled.
    if opted_out:
        settling.settle_all(rt.store, opted_out, rt.now)
    return view


def ingest(
    rt: Runtime,
    channel: str,
    incoming: Incoming,
    *,
    read_from: str | object | None = UNREAD,
    taking: Callable[[Session], None] | None = None,
) -> inbound.IngestReport:
    """Store what a channel brought in (messages, receipts) in one transaction.

    ``read_from``: the stored position the poll started from; the channel's new
    position (``incoming.cursor``) is stored in the same transaction, so what
    was read is either all stored with the position after it, or not at all
    and read again. A pushed request (``relay serve``) passes no position.
    ``taking``: run first in the same transaction (the daemon deletes the
    stored pushes it ingests there, so each is taken once).
    """
    from relay.engine.contacts import settling
    from relay.store import failures

    if rt.config.settings.intent.enabled:  # asked before the transaction opens
        from relay.engine.verbs import intents

        incoming = intents.labelled(rt, channel, incoming, keywords(rt))
    try:
        report = failures.retry_conflicts(
            lambda: _ingest(rt, channel, incoming, read_from, taking, careful=False)
        )
    except Exception as exc:
        if failures.is_transient(exc):
            raise
        # One item the database refuses must not hold back the others (and
        # the position): store them one by one, that one kept aside.
        log.warning("channel %s: storing one by one after %s", channel, failures.kind(exc))
        report = failures.retry_conflicts(
            lambda: _ingest(rt, channel, incoming, read_from, taking, careful=True)
        )
    # Committed: an opt-out among what arrived (a STOP, an unsubscribe, a
    # complaint) is acknowledged once the sends under way have settled.
    if report.opted_out:
        settling.settle_all(rt.store, report.opted_out, rt.now)
    return report


def _ingest(
    rt: Runtime,
    channel: str,
    incoming: Incoming,
    read_from: str | object | None,
    taking: Callable[[Session], None] | None,
    *,
    careful: bool,
) -> inbound.IngestReport:
    from relay.engine.inbound import ingest as inbound

    with rt.store.transaction() as session:
        if taking is not None:
            taking(session)
        arrivals.lock_channel(session, channel)
        now = rt.now()
        report = inbound.ingest(
            session,
            channel,
            incoming,
            now,
            resolve=lambda given: address_for(rt, given),
            keywords=keywords(rt),
            careful=careful,
            bounces=soft_bounces(rt),
        )
        if incoming.cursor is not None and read_from is not UNREAD:
            assert read_from is None or isinstance(read_from, str)
            moved = arrivals.advance_cursor(
                session, channel, read=read_from, position=incoming.cursor, now=now
            )
            if not moved:
                log.debug("channel %s: another poller moved the position first", channel)
        return report


def soft_bounces(rt: Runtime) -> SoftBounces:
    """``[bounces]``: when repeated soft bounces mark an address undeliverable."""
    from relay.engine.contacts.bounce_marks import SoftBounces

    policy = rt.config.settings.bounces
    return SoftBounces(policy.soft_limit, policy.soft_window)


def keywords(rt: Runtime) -> inbound.Keywords:
    from relay.engine.inbound import ingest as inbound

    settings = rt.config.settings
    optout, acts = settings.optout, settings.intent.opt_out
    scope = settings.compliance.optout_scope
    return inbound.Keywords.from_config(optout.keywords, optout.optin_keywords, scope, acts)


def opts_out(rt: Runtime, incoming: Incoming, words: inbound.Keywords | None = None) -> bool:
    """Whether what arrived holds an opt-out (a STOP, an unsubscribe, a complaint,
    a receipt saying the contact opted out): ``relay serve`` ingests such a request
    at once, answering it only once the sends under way have settled. ``words``:
    :func:`keywords`, which a server keeps rather than reads per request."""
    from relay.engine.inbound import ingest as inbound

    words = words or keywords(rt)
    return any(r.opted_out for r in incoming.receipts) or any(
        inbound.opts_out(m.kind, m.text, words) for m in incoming.messages
    )


def poll(rt: Runtime, channel: str) -> inbound.IngestReport:
    """Ask one channel what arrived after its stored position and store it with its
    new position."""
    from relay.engine.runtime import Channels, read_position

    position = read_position(rt, channel)
    batch = Channels(rt).get(channel).poll(position)
    return ingest(rt, channel, batch, read_from=position)
