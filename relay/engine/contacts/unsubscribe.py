"""One-click unsubscribe tokens (RFC 8058): ``<contact id>.<instance id>.<MAC>``.

The token names the contact and the conversation, and carries an HMAC-SHA256
(128 bits kept) under a key relay generates once and keeps in the store, so
nobody can make a token for another contact or guess one; every process that
shares the store (dispatchers, ``relay serve``) shares the key. The key lives
in ``state_entries`` under scope ``system``, which agents' scoped state
(``app``/``contact``/instance) never loads, so no agent ever sees it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from relay.core.errors import InvalidInput
from relay.store import contacts, instances, state_entries
from relay.store.models import Contact, StateEntry

if TYPE_CHECKING:
    from collections.abc import Callable

    from relay.engine.runtime import Runtime

    OptOut = Callable[..., None]

#: The provider id prefix of ``relay serve``'s one-click unsubscribe (RFC 8058).
ONE_CLICK = "unsubscribe:"
SCOPE = "system"
KEY_NAME = "unsubscribe_key"
MAC_BYTES = 16


@dataclass(frozen=True)
class UnsubscribeTokens:
    key: bytes

    def make(self, contact_id: int, instance_id: str | None) -> str:
        payload = f"{contact_id}.{instance_id or '-'}"
        return f"{payload}.{self.mac(payload)}"

    def read(self, token: str) -> tuple[int, str | None]:
        """(contact id, instance id or None); InvalidInput for anything forged or mangled."""
        contact, _, rest = token.partition(".")
        instance, _, mac = rest.partition(".")
        payload = f"{contact}.{instance}"
        if not (contact.isdigit() and instance and mac) or not hmac.compare_digest(
            self.mac(payload), mac
        ):
            raise InvalidInput("unknown or invalid unsubscribe token")
        return int(contact), (None if instance == "-" else instance)

    def mac(self, payload: str) -> str:
        """The MAC under the store's key, URL- and Telegram-safe (``[A-Za-z0-9_-]``);
        other tokens (a chat link's, :mod:`relay.engine.contacts.addresses`) sign their
        own payloads with it, prefixed so that no payload of one kind is ever one of
        another."""
        digest = hmac.new(self.key, payload.encode("utf-8"), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest[:MAC_BYTES]).decode("ascii").rstrip("=")


def tokens(session: Session, now: datetime) -> UnsubscribeTokens:
    """The store's token key, created on first use (a concurrent creator wins)."""
    entry = state_entries.entry(session, SCOPE, "", KEY_NAME)
    if entry is None:
        try:
            with session.begin_nested():
                session.add(
                    StateEntry(
                        scope=SCOPE,
                        scope_id="",
                        key=KEY_NAME,
                        value=secrets.token_hex(32),
                        updated_at=now,
                    )
                )
                session.flush()
        except IntegrityError:
            pass
        entry = state_entries.entry(session, SCOPE, "", KEY_NAME)
        assert entry is not None
    return UnsubscribeTokens(bytes.fromhex(str(entry.value)))


def resolve(relay: Runtime, token: str) -> tuple[str, str]:
    """(contact address, channel name) for a token; InvalidInput when it is not
    one of ours. The channel is the conversation's, so the opt-out is recorded
    where the message that carried the link went."""
    with relay.store.transaction() as session:
        contact_id, instance_id = tokens(session, relay.now()).read(token)
        person = session.get(Contact, contact_id)
        if person is None:
            raise InvalidInput("unknown or invalid unsubscribe token")
        instance = instances.by_id(session, instance_id) if instance_id else None
        channel = instance.channel if instance is not None else "email"
        return person.address, channel


def used_again(
    session: Session,
    contact_id: int,
    provider_id: str,
    channel: str,
    now: datetime,
    opt_out: OptOut,
) -> None:
    """A one-click link used again (the contact's first use is stored under
    ``provider_id``) opts out again: the contact may have opted back in since (a
    retried POST while still opted out changes nothing). Only the one-click
    route's ids: a mail re-read after a mailbox rebuild must not undo a later opt-in."""
    if not provider_id.startswith(ONE_CLICK):
        return
    contacts.lock(session, contact_id)
    person = session.get(Contact, contact_id, populate_existing=True)
    if person is not None and person.opted_out_at is None:
        opt_out(session, person, now, reason=f"unsubscribe on {channel} (link used again)")
