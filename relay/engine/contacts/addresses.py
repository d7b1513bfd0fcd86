"""Contact addresses: phone numbers to E.164, email addresses validated.

One person written two ways (``+1 555 123 0001`` and ``+15551230001``,
``Ana@X.com`` and ``ana@x.com``) must be one contact, so every address is
normalised before it is looked up or stored. Email addresses are lower-cased
whole, local part included; "Ana Lima <ana@x.com>" keeps "Ana Lima" as the
contact's name.

A phone number must never silently become another person's. Digits written
with their country code but no ``+`` (``4930123456``, as WhatsApp's ``wa_id``
and many CSV exports write them) are read as international only when the
channel says numbers come that way (``channel="whatsapp"``/``"telegram"`` or
``international=True`` for a column declared E.164); otherwise, when they read
as a number both ways, they are refused with both readings shown. ``00`` and
``011`` international prefixes are read as ``+``.

The contact book is here too, the one place a contact row is found or created
(:func:`find_or_create`) and its other addresses given: two commands about one
new address can race (a ``relay start`` and an inbound message, say); the
unique address decides, and the loser uses the winner's row.

And the chats bound to contacts (the last section): a bot cannot write first,
so ``relay contact link`` hands out ``t.me/<bot>?start=<token>`` for a contact;
the ``/start <token>`` from the person's chat binds that chat to the contact on
that channel (``contact_aliases``), both ways. The token is ``<contact id>-<MAC>``,
made under the one-click unsubscribe key (:mod:`relay.engine.contacts.unsubscribe`)
over ``start:<channel>:<contact id>``: not guessable, nor usable for another contact
or bot. A bearer credential: whoever opens the link binds their chat; the newest wins.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from relay.core.errors import InvalidInput, NotFound
from relay.store import contact_addresses, contacts

if TYPE_CHECKING:
    from relay.channels.base import Inbound
    from relay.engine.contacts.unsubscribe import UnsubscribeTokens
    from relay.engine.runtime import Runtime
    from relay.store.models import Contact

log = logging.getLogger("relay.contacts")


@dataclass(frozen=True)
class Address:
    value: str
    kind: str  # "phone" | "email" | "telegram"
    name: str | None = None  # the display name of "Name <addr>"


#: Channels whose numbers always carry their country code, with or without ``+``.
INTERNATIONAL_CHANNELS = frozenset({"whatsapp", "telegram"})


#: A Telegram chat id as a contact: ``telegram:123456789`` (groups: ``telegram:-100...``).
TELEGRAM_PREFIX = "telegram:"


def normalise_address(
    text: str,
    region: str = "US",
    *,
    channel: str | None = None,
    international: bool = False,
) -> Address:
    """The one form of an address (see the module docstring for phone numbers).

    ``channel`` names where the address came from (a WhatsApp ``wa_id`` and a
    Telegram deep link carry the country code without ``+``); ``international``
    says the same for a CSV column declared E.164."""
    raw = text.strip()
    if not raw:
        raise InvalidInput("contact address is empty")
    name, raw = _display_name(raw)
    if raw.lower().startswith(TELEGRAM_PREFIX):
        return _telegram(raw)
    if "@" in raw:
        return replace(_email(raw), name=name)
    if channel and channel.split(":")[0].lower() in INTERNATIONAL_CHANNELS:
        international = True
    return replace(_phone(raw, region, international=international), name=name)


def _display_name(raw: str) -> tuple[str | None, str]:
    """``Ana Lima <ana@x.com>`` (or ``"Lima, Ana" <ana@x.com>``) as its name and address."""
    if not raw.endswith(">") or "<" not in raw:
        return None, raw
    from email.utils import parseaddr

    name, address = parseaddr(raw)
    if not address:
        raise InvalidInput(f"invalid contact {raw!r}: expected Name <address>")
    return (" ".join(name.split()) or None), address


def kind_of(normalised: str) -> str:
    """The kind of an address that :func:`normalise_address` already returned
    (a bulk insert need not parse a phone number a second time)."""
    if normalised.startswith(TELEGRAM_PREFIX):
        return "telegram"
    return "email" if "@" in normalised else "phone"


def _email(raw: str) -> Address:
    from email_validator import EmailNotValidError, validate_email

    try:
        result = validate_email(raw, check_deliverability=False)
    except EmailNotValidError as exc:
        raise InvalidInput(f"invalid email address {raw!r}: {exc}") from None
    local, _, domain = result.normalized.rpartition("@")
    # RFC 5321 lets a server treat the local part case-sensitively, but no common
    # provider does, and people type ``Ana@`` and ``ana@`` for one mailbox: one contact.
    return Address(f"{local.lower()}@{domain.lower()}", "email")


_PUNCTUATION = re.compile(r"[\s().\-/]")


def _phone(raw: str, region: str, *, international: bool = False) -> Address:
    import phonenumbers

    compact = _PUNCTUATION.sub("", raw)
    written = _international_form(compact, international)
    if written is not None:
        return _e164(phonenumbers, written, raw, None)
    where = region.upper() or None
    try:
        local: Address | None = _e164(phonenumbers, raw, raw, where)
    except InvalidInput as exc:
        local, error = None, exc
    abroad = None
    if compact.isdigit() and not compact.startswith("0"):
        # perhaps a country code written without "+" (4930123456 is Berlin, not +1 493...)
        with contextlib.suppress(InvalidInput):
            abroad = _e164(phonenumbers, "+" + compact, raw, None)
    if abroad is not None and _ambiguous(phonenumbers, compact, where, local, abroad):
        here = f"{local.value} in region {where}" if local else f"not a number in region {where}"
        raise InvalidInput(
            f"ambiguous phone number {raw!r}: {here}, {abroad.value} with a country code; "
            "write it with + (or 00)"
        )
    if local is None:
        raise error
    return local


def _international_form(compact: str, international: bool) -> str | None:
    """``+...`` for a number written internationally (``+``, ``00``, ``011``, or bare
    digits where the caller says they carry their country code); None otherwise."""
    if compact.startswith("+"):
        return compact
    if compact.startswith("011"):  # North America's international prefix
        return "+" + compact[3:]
    if compact.startswith("00"):  # most of the world's
        return "+" + compact[2:]
    if international and compact.isdigit():
        return "+" + compact
    return None


def _ambiguous(
    phonenumbers: Any, compact: str, where: str | None, local: Address | None, abroad: Address
) -> bool:
    """Whether the digits are a real number with their country code and the local
    reading is not one (or is the country code read twice: 4915... in DE)."""
    if local is not None and local.value == abroad.value:
        return False
    if not _valid(phonenumbers, abroad.value):
        return False  # neither reading is real: a fictional number, read as written
    if local is None:
        return True
    if compact.startswith(str(phonenumbers.country_code_for_region(where or ""))):
        return True
    return not _valid(phonenumbers, local.value)


def _valid(phonenumbers: Any, e164: str) -> bool:
    return bool(phonenumbers.is_valid_number(phonenumbers.parse(e164, None)))


def _e164(phonenumbers: Any, text: str, raw: str, region: str | None) -> Address:
    try:
        number = phonenumbers.parse(text, region)
    except phonenumbers.NumberParseException as exc:
        raise InvalidInput(
            f"invalid contact {raw!r}: not a phone number or email ({exc})"
        ) from None
    # Possible, not valid: fictional ranges such as 555 must still work in demos and tests.
    if not phonenumbers.is_possible_number(number):
        raise InvalidInput(f"invalid phone number {raw!r}")
    return Address(phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164), "phone")


def _telegram(raw: str) -> Address:
    chat = raw[len(TELEGRAM_PREFIX) :].strip()
    if not chat.lstrip("-").isdigit():
        raise InvalidInput(
            f"invalid Telegram contact {raw!r}: expected telegram:<chat id>, "
            "such as telegram:123456789"
        )
    return Address(f"{TELEGRAM_PREFIX}{int(chat)}", "telegram")


def address_for(rt: Runtime, contact: str, channel_type: str | None = None) -> Address:
    """``contact`` normalised as the configuration reads it (``[defaults] region``).
    ``channel_type``: the type of the channel that will reach it (``whatsapp``,
    ``telegram``: digits carry their country code; see :func:`normalise_address`)."""
    return normalise_address(contact, rt.config.settings.defaults.region, channel=channel_type)


def normalise(rt: Runtime, contact: str) -> str:
    return address_for(rt, contact).value


# -- the contact book --------------------------------------------------------------------


def find(session: Session, address: str) -> Contact:
    found = contacts.by_address(session, address)
    if found is None:
        raise NotFound(f"no contact {address}")
    return found


def find_or_create(session: Session, address: Address, now: datetime) -> Contact:
    from relay.store.models import Contact

    found = contacts.by_address(session, address.value)
    if found is not None:
        if address.name and not (found.fields or {}).get("name"):
            found.fields = {**(found.fields or {}), "name": address.name}  # "Ana <ana@x.com>"
            found.updated_at = now
        return found
    contact = Contact(address=address.value, kind=address.kind, created_at=now, updated_at=now)
    if address.name:
        contact.fields = {"name": address.name}
    try:
        with session.begin_nested():
            session.add(contact)
            session.flush()
            contact_addresses.add_own(session, contact, now)
    except IntegrityError:
        existing = contacts.by_address(session, address.value)
        if existing is None:
            raise
        return existing
    return contact


def add_address(session: Session, person: Contact, address: Address, now: datetime) -> bool:
    """Give the contact ``address`` as its address of that kind (replacing the one it
    had); whether anything changed. Its own address (its identity) stays: another of
    that kind is refused, as is an address another contact has."""
    if address.value == person.address:
        return False
    if address.kind == person.kind:
        raise InvalidInput(
            f"contact {person.address} is known by its {address.kind}; "
            f"{address.value} cannot be its {address.kind} too"
        )
    owner = contact_addresses.contact_id_for(session, address.value)
    if owner == person.id:
        return False
    if owner is not None:
        raise InvalidInput(f"{address.value} is another contact's address")
    contact_addresses.put(session, person.id, address.kind, address.value, now)
    person.updated_at = now
    return True


#: The kinds of address a contact has one of each.
KINDS = ("phone", "email", "telegram")


def checked_addresses(
    normalise: Callable[[str], Address], given: Mapping[str, str]
) -> list[Address]:
    """``{kind: text}`` (``relay contact set --email ...``) normalised, each of the kind
    it is given as; refused (nothing written) otherwise."""
    found = []
    for kind, text in given.items():
        if kind not in KINDS:
            raise InvalidInput(f"unknown kind of address {kind!r} (known: {', '.join(KINDS)})")
        try:
            address = normalise(text if kind != "telegram" or ":" in text else f"telegram:{text}")
        except InvalidInput as exc:
            raise InvalidInput(f"--{kind} {text!r}: {exc.message}") from None
        if address.kind != kind:
            raise InvalidInput(f"--{kind} {text!r} is a {address.kind} address, not {kind}")
        found.append(address)
    return found


def set_addresses(
    session: Session, person: Contact, addresses: Sequence[Address], now: datetime
) -> dict[str, str]:
    """Give the contact these addresses (:func:`add_address`); those that changed."""
    return {a.kind: a.value for a in addresses if add_address(session, person, a, now)}


# -- chats bound by a deep link ----------------------------------------------------------


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


def start_token(keys: UnsubscribeTokens, channel: str, contact_id: int) -> str:
    return f"{contact_id}-{keys.mac(_payload(channel, contact_id))}"


def read_start_token(keys: UnsubscribeTokens, channel: str, token: str) -> int | None:
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
    from relay.engine.contacts import unsubscribe
    from relay.store import aliases

    deep_link = getattr(built, "deep_link", None)
    if not callable(deep_link):
        raise InvalidInput(f"channel {channel} cannot bind chats: links are for telegram channels")
    deep_link("0")  # a missing bot_username is refused before anything is written
    address = normalise_address(contact, runtime.config.settings.defaults.region)
    if address.kind == "telegram":
        raise InvalidInput(f"{address.value} is a chat id already: start conversations with it")
    with runtime.store.transaction() as session:
        now = runtime.now()
        person = find_or_create(session, address, now)
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
    # The write side (the ORM's classes) stays off read commands, which normalise here.
    from relay.engine.contacts import unsubscribe
    from relay.engine.conversation import audit
    from relay.store import aliases
    from relay.store.models import Contact

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
    from relay.store import aliases

    return aliases.address_for(session, channel, contact_id) or address


def contact_for_arrival(session: Session, channel: str, address: Address, now: datetime) -> Contact:
    """The contact an inbound message is from: the one its chat is bound to on
    ``channel``, else the contact of its address (created if new)."""
    from relay.store import aliases
    from relay.store.models import Contact

    bound = aliases.contact_for(session, channel, address.value)
    person = session.get(Contact, bound) if bound is not None else None
    return person if person is not None else find_or_create(session, address, now)
