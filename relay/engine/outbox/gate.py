"""Whether an outbound message may go now: the dispatcher asks when it claims a
batch, and again under the conversation's lock just before sending each group
(on SQLite, not for a group sent straight after its claim).

Asking at the last moment is what makes an acknowledged ``relay cancel`` or
``relay pause`` final: a message written earlier (the rest of a multi-message
turn, a retry waiting out its backoff, a send left ``sending`` by a crashed
daemon) is held or cancelled here instead of reaching the contact afterwards.
A SQLite claim asked a moment before holding the database's write lock, so no
pause or cancel could come between (``relay.engine.outbox.dispatcher.FRESH``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from sqlalchemy.orm import Session

from relay.config import Config
from relay.core.errors import RelayError
from relay.core.ladder import from_json, kind_on, rung_of
from relay.core.states import State, delivers
from relay.core.values import MessageStatus
from relay.engine.conversation import policy
from relay.store import aliases, contact_addresses, delivery_facts
from relay.store.locked_rows import MessageFields


class Verdict(Enum):
    GO = "go"
    #: Not now: the conversation is paused (or still queued); resuming releases it.
    HOLD = "hold"
    #: Never, and not a failure: the conversation moved on without it.
    CANCEL = "cancel"
    #: Never: the contact opted out.
    BLOCK = "block"
    #: Never: the address cannot be reached.
    FAIL = "fail"


@dataclass(frozen=True)
class Ruling:
    verdict: Verdict
    reason: str | None = None


GO = Ruling(Verdict.GO)
#: How long a message whose hours can never be met waits before it is looked at again.
NEVER_OPEN_RETRY = timedelta(hours=1)


@dataclass(frozen=True)
class Facts:
    """What the rules look at, read for a whole batch in three queries."""

    contacts: dict[int, Any]
    instances: dict[str, Any]
    #: The newest inbound message id per instance.
    last_inbound: dict[str, int]
    #: Bound chats: ``{(channel, contact id): address}`` (see ``contact_aliases``).
    aliases: dict[tuple[str, int], str] = field(default_factory=dict)
    #: The addresses of contacts whose conversation has a channel ladder:
    #: ``{(contact id, kind): address}`` (see ``contact_addresses``).
    addresses: dict[tuple[int, str], str] = field(default_factory=dict)
    #: ``{(contact id, kind)}`` the contact opted out of alone (per-channel scope).
    closed: set[tuple[int, str]] = field(default_factory=set)

    def kind(self, channel: str, contact_id: int, instance_id: str | None) -> str:
        """The kind of the contact's address a message on ``channel`` writes to."""
        instance = self.instances.get(instance_id or "")
        rungs = from_json(instance.ladder) if instance is not None else ()
        return kind_on(rungs, channel, str(self.contacts[contact_id].kind))

    def address(self, channel: str, contact_id: int, instance_id: str | None = None) -> str:
        """Where the message goes on ``channel``: the contact's bound chat there, if
        any; else, on a rung of its conversation's ladder, the contact's address of
        the rung's kind; else the contact's own address."""
        bound = self.aliases.get((channel, contact_id))
        if bound:
            return bound
        instance = self.instances.get(instance_id or "")
        rung = rung_of(from_json(instance.ladder), channel) if instance is not None else None
        if rung is not None and rung.kind is not None:
            found = self.addresses.get((contact_id, rung.kind))
            if found:
                return found
        return str(self.contacts[contact_id].address)

    @classmethod
    def read(cls, session: Session, messages: Iterable[MessageFields]) -> Facts:
        rows = list(messages)
        contact_ids = {m.contact_id for m in rows}
        instance_ids = {m.instance_id for m in rows if m.instance_id}
        contacts: dict[int, Any] = {}
        instances: dict[str, Any] = {}
        last_inbound: dict[str, int] = {}
        if contact_ids:
            contacts = delivery_facts.contact_facts(session, contact_ids)
        if instance_ids:
            instances = delivery_facts.instance_facts(session, instance_ids)
            last_inbound = delivery_facts.last_inbound_ids(session, instance_ids)
        pairs = {(m.channel or "console", m.contact_id) for m in rows}
        laddered = {m.contact_id for m in rows if _laddered(instances.get(m.instance_id or ""))}
        return cls(
            contacts,
            instances,
            last_inbound,
            aliases.addresses_for(session, pairs),
            contact_addresses.of_contacts(session, laddered),
            contact_addresses.opted_out_kinds(session, contact_ids),
        )


def _laddered(instance: Any) -> bool:
    return instance is not None and bool(instance.ladder)


def rule(message: MessageFields, facts: Facts) -> Ruling:
    contact = facts.contacts.get(message.contact_id)
    if contact is not None and contact.opted_out_at is not None:
        return Ruling(Verdict.BLOCK, "contact opted out")
    closed = _closed_kind(message, facts) if contact is not None else None
    if closed is not None:
        return Ruling(Verdict.BLOCK, f"contact opted out of {closed}")
    if contact is not None and contact.undeliverable_reason:
        return Ruling(Verdict.FAIL, f"address undeliverable: {contact.undeliverable_reason}")
    instance = facts.instances.get(message.instance_id or "")
    if instance is None:
        return GO
    state = State(instance.state)
    goes = delivers(state)  # a completed conversation's farewell still goes
    if goes is None:
        return Ruling(Verdict.HOLD, f"conversation is {state.value}")
    if not goes:
        return Ruling(Verdict.CANCEL, f"conversation ended ({state.value}) before delivery")
    if message.proactive and facts.last_inbound.get(instance.id, 0) > message.id:
        return Ruling(Verdict.CANCEL, "superseded: the contact wrote after it was written")
    return GO


def _closed_kind(message: MessageFields, facts: Facts) -> str | None:
    """The kind of address the message writes to, if the contact opted out of it alone."""
    if not facts.closed:
        return None
    kind = facts.kind(message.channel or "console", message.contact_id, message.instance_id)
    return kind if (message.contact_id, kind) in facts.closed else None


def window_opens(
    message: MessageFields, facts: Facts, config: Config, now: datetime
) -> datetime | None:
    """When a proactive message (a first message, a follow-up) may go, if not now:
    its sending window, the legal hours of the contact's place and its holidays
    (:mod:`relay.engine.conversation.policy`).

    Checked at send time, not only when the turn was scheduled: a message held by
    a rate limit or a retry must not reach the contact at 3 a.m. because it was
    written at 5 p.m.
    """
    if not message.proactive:
        return None
    instance = facts.instances.get(message.instance_id or "")
    contact = facts.contacts.get(message.contact_id)
    if contact is None:
        return None
    try:
        window = policy.window_of(instance, config)
        hold = policy.hold_for(window, contact.address, contact.timezone, config)
        if hold.window is None and not hold.legal and not hold.holidays:
            return None
        opens = policy.opens(hold, now)
    except RelayError:
        # Hours that can never be met: held, never sent at a forbidden time (the
        # heartbeat hands such a conversation to a person).
        return now + NEVER_OPEN_RETRY
    return opens if opens > now else None


def apply(message: MessageFields, ruling: Ruling) -> None:
    """Record a ruling other than GO on the (locked) message row."""
    message.last_error = ruling.reason
    message.lease_owner = None
    if ruling.verdict is Verdict.HOLD:
        # Not an attempt; due again when the conversation is resumed.
        message.status = MessageStatus.QUEUED.value
        message.attempts = max(0, message.attempts - 1)
        message.next_attempt_at = None
        return
    message.next_attempt_at = None
    message.status = {
        Verdict.CANCEL: MessageStatus.CANCELLED,
        Verdict.BLOCK: MessageStatus.BLOCKED,
        Verdict.FAIL: MessageStatus.FAILED,
    }[ruling.verdict].value
