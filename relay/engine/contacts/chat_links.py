"""Binding a Telegram chat to a contact known by another address.

A bot cannot write to a person first, and a person's chat id is unknown until
they write. So relay hands the operator a deep link, ``t.me/<bot>?start=<token>``,
for a contact (a phone number, an email address); the person opens it and
presses Start, Telegram sends ``/start <token>`` from their chat, and relay binds
that chat to the contact on that channel (``contact_aliases``). From then on
the contact's conversations on the channel go to the chat, and the chat's
messages reach the contact's conversations.

The token is ``<contact id>-<MAC>``: the MAC (128 bits) is made under the same
store-kept key as the one-click unsubscribe tokens (:mod:`relay.engine.contacts.unsubscribe`)
over ``start:<channel>:<contact id>``, so it cannot be guessed, made for another
contact, or used on another bot. It is a bearer credential: whoever opens the
link binds their chat, and the newest ``/start`` wins.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from relay.channels.base import Inbound
from relay.core.errors import InvalidInput
from relay.engine.contacts import addresses as contacts
from relay.engine.contacts import unsubscribe
from relay.engine.contacts.addresses import Address, normalise_address
from relay.engine.conversation import audit
from relay.store import aliases
from relay.store.models import Contact

if TYPE_CHECKING:
    from relay.engine.runtime import Runtime

log = logging.getLogger("relay.chat_links")


@dataclass(frozen=True)
class ChatLink:
    """What ``relay contact link`` prints."""

    contact: str
    channel: str
    link: str
    #: The chat the contact is bound to on this channel now, if any.
    bound_to: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "contact": self.contact,
            "channel": self.channel,
            "link": self.link,
            "bound_to": self.bound_to,
        }


def start_token(keys: unsubscribe.UnsubscribeTokens, channel: str, contact_id: int) -> str:
    return f"{contact_id}-{keys.mac(_payload(channel, contact_id))}"


def read_start_token(keys: unsubscribe.UnsubscribeTokens, channel: str, token: str) -> int | None:
    """The contact id a token names, or None when it is not one of ours for ``channel``."""
    contact, _, mac = token.partition("-")
    if not (contact.isdigit() and mac):
        return None
    if not hmac.compare_digest(keys.mac(_payload(channel, int(contact))), mac):
        return None
    return int(contact)


def _payload(channel: str, contact_id: int) -> str:
    return f"start:{channel}:{contact_id}"


def link(runtime: Runtime, channel: str, built: Any, contact: str) -> ChatLink:
    """The deep link that binds a chat on ``channel`` (``built``, the channel object)
    to ``contact`` (created if new). A bad channel or a missing ``bot_username`` is
    refused before anything is written."""
    deep_link = getattr(built, "deep_link", None)
    if not callable(deep_link):
        raise InvalidInput(f"channel {channel} cannot bind chats: links are for telegram channels")
    deep_link("0")  # a missing bot_username is refused before anything is written
    address = normalise_address(contact, runtime.config.settings.defaults.region)
    if address.kind == "telegram":
        raise InvalidInput(f"{address.value} is a chat id already: start conversations with it")
    with runtime.store.transaction() as session:
        now = runtime.now()
        person = contacts.find_or_create(session, address, now)
        token = start_token(unsubscribe.tokens(session, now), channel, person.id)
        bound = aliases.address_for(session, channel, person.id)
    return ChatLink(address.value, channel, str(deep_link(token)), bound)


def bind(
    session: Session,
    channel: str,
    item: Inbound,
    now: datetime,
    resolve: Callable[[str], Address],
) -> bool:
    """Bind the sender's chat to the contact ``item.bind_token`` names; False when
    the token is not one of ours (the message is then stored as any other)."""
    if not item.bind_token:
        return False
    contact_id = read_start_token(unsubscribe.tokens(session, now), channel, item.bind_token)
    person = session.get(Contact, contact_id) if contact_id is not None else None
    if person is None:
        return False
    try:
        chat = resolve(item.sender).value
    except InvalidInput:
        return False
    aliases.bind(session, channel, person.id, chat, now)
    args = {"contact": person.address, "channel": channel, "chat": chat}
    audit.record(session, "contact bind", None, args, now, actor=channel)
    log.info("%s bound to %s on %s", chat, person.address, channel)
    return True


def reach(session: Session, channel: str, contact_id: int, address: str) -> str:
    """Where a contact is reached on ``channel``: its bound chat, else its address."""
    return aliases.address_for(session, channel, contact_id) or address


def contact_for_arrival(session: Session, channel: str, address: Address, now: datetime) -> Contact:
    """The contact an inbound message is from: the one its chat is bound to on
    ``channel``, else the contact of its address (created if new)."""
    bound = aliases.contact_for(session, channel, address.value)
    person = session.get(Contact, bound) if bound is not None else None
    return person if person is not None else contacts.find_or_create(session, address, now)
