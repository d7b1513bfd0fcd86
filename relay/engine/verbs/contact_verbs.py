"""The contact verbs: look a contact up, opt it out or in, set its time zone and consent
(export and erasure: :mod:`relay.engine.verbs.privacy`).

Each verb is one transaction, audited as a contact-level command (no instance);
:class:`relay.api.Relay` delegates to them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from relay.config import Config
from relay.core.errors import InvalidInput, RelayError
from relay.engine.contacts import addresses as contacts
from relay.engine.contacts.addresses import address_for, normalise
from relay.engine.conversation import audit
from relay.engine.runtime import Context, Runtime
from relay.engine.verbs import privacy
from relay.engine.views.instances import ContactView, MessageView
from relay.engine.views.marks import UndeliverableMark
from relay.store import contact_addresses, instances
from relay.store import contacts as store_contacts

if TYPE_CHECKING:
    from relay.engine.contacts.addresses import ChatLink
    from relay.engine.verbs.optout_lists import OptOutImport
    from relay.store.models import Contact


def _contact(rt: Runtime, session: Session, address: str, *, create: bool) -> Contact:
    if not create:
        return contacts.find(session, address)
    return contacts.find_or_create(session, address_for(rt, address), rt.now())


def contact_link(rt: Context, channel: str, contact: str) -> ChatLink:
    """The ``t.me/<bot>?start=<token>`` link binding a chat on ``channel`` to
    ``contact`` (see :mod:`relay.engine.contacts.addresses`)."""
    from relay.engine.verbs.backend_checks import built_channel

    return contacts.link(rt, channel, built_channel(rt, channel), contact)


def contact(rt: Runtime, contact: str) -> ContactView:
    address = normalise(rt, contact)
    with rt.store.read_transaction() as session:
        person = _contact(rt, session, address, create=False)
        return _contact_view(rt, session, person)


def _contact_view(rt: Runtime, session: Session, person: Contact) -> ContactView:
    holder = instances.slot_holder(session, person.id)
    waiting = instances.queued(session, person.id)
    unrouted = store_contacts.unrouted_of(session, person.id)
    return ContactView(
        address=person.address,
        kind=person.kind,
        timezone=person.timezone,
        opted_out_at=person.opted_out_at,
        live_instance=holder.id if holder else None,
        queued=tuple(i.id for i in waiting),
        unrouted=tuple(MessageView.build(m, person.address) for m in unrouted),
        fields=dict(person.fields or {}),
        undeliverable=_mark(session, person),
        addresses=contact_addresses.of_contact(session, person.id),
        opted_out_kinds=contact_addresses.opt_outs_of(session, person.id),
        consent=person.consent,
        consent_at=person.consent_at,
        legal_hours=_legal_hours(rt.config, person),
    )


def import_opt_outs(
    rt: Context, text: str, *, column: str | None = None, reason: str = "operator list"
) -> OptOutImport:
    """Opt out every address of a do-not-contact list (see ``verbs.optout_lists``)."""
    from relay.engine.verbs.optout_lists import import_opt_outs

    return import_opt_outs(
        rt.store,
        text,
        address=lambda given: address_for(rt, given),
        now=rt.now(),
        actor=rt.who(),
        column=column,
        reason=reason,
    )


def deliverable(rt: Context, contact: str) -> ContactView:
    """Clear the contact's undeliverable mark (a bounce was wrong, the mailbox is
    fixed): new conversations and sends reach it again. Audited with the old reason;
    messages failed by the mark stay failed (``relay retry`` sends one again)."""
    address = normalise(rt, contact)
    with rt.store.transaction() as session:
        person = _contact(rt, session, address, create=False)
        if person.undeliverable_at is not None:
            old = person.undeliverable_reason
            bounce = person.bounce_reason
            person.undeliverable_at = None
            person.undeliverable_reason = None
            person.bounce_reason = None
            person.undeliverable_message_id = None
            person.updated_at = rt.now()
            _audit_contact(
                rt, session, "contact deliverable", address, old_reason=old, bounce_reason=bounce
            )
        return _contact_view(rt, session, person)


def opt_out(
    rt: Context, contact: str, *, reason: str = "operator", channel_kind: str | None = None
) -> ContactView:
    """Mark the contact opted out: its live conversation ends, nothing more is sent.
    ``channel_kind`` (sms, email, telegram): only the contact's address of that kind,
    which needs ``[compliance] optout_scope = "channel"`` (exit 2 otherwise)."""
    from relay.engine.contacts import optouts, settling

    kind = _scoped_kind(rt, channel_kind)
    address = normalise(rt, contact)
    with rt.store.transaction() as session:
        person = _contact(rt, session, address, create=True)
        now = rt.now()
        optouts.opt_out(session, person, now, reason=f"operator: {reason}", kind=kind)
        _audit_contact(rt, session, "opt-out", address, reason=reason, **_kind_arg(kind))
        view, contact_id = _contact_view(rt, session, person), person.id
    # Committed: wait for the sends already under way, and say how many there were.
    in_flight = settling.settle(rt.store, contact_id, now, rt.now)
    return replace(view, in_flight=in_flight)


def opt_in(rt: Context, contact: str, *, channel_kind: str | None = None) -> ContactView:
    """Opt the contact back in: wholly (every kind with it), or ``channel_kind`` only."""
    from relay.core.optout_scope import kind_for_flag
    from relay.engine.contacts import optouts

    kind = kind_for_flag(channel_kind) if channel_kind is not None else None
    address = normalise(rt, contact)
    with rt.store.transaction() as session:
        person = _contact(rt, session, address, create=False)
        optouts.opt_in(person, rt.now(), session=session, kind=kind)
        _audit_contact(rt, session, "opt-in", address, **_kind_arg(kind))
        return _contact_view(rt, session, person)


def _kind_arg(kind: str | None) -> dict[str, str]:
    return {"kind": kind} if kind is not None else {}


def _scoped_kind(rt: Context, channel_kind: str | None) -> str | None:
    """The kind ``--channel-kind`` names; refused unless opt-outs are per channel."""
    from relay.core.optout_scope import CHANNEL, kind_for_flag

    if channel_kind is None:
        return None
    kind = kind_for_flag(channel_kind)
    if rt.config.settings.compliance.optout_scope != CHANNEL:
        raise InvalidInput(
            '--channel-kind needs [compliance] optout_scope = "channel" '
            "(with the default scope, an opt-out stops every channel)"
        )
    return kind


def set_contact(
    rt: Context,
    contact: str,
    *,
    timezone: str | None = None,
    consent: str | None = None,
    addresses: Mapping[str, str] | None = None,
) -> ContactView:
    """Set the contact's time zone, consent record and other addresses (``{"email": ...,
    "phone": ..., "telegram": ...}``: one of each kind, its own address staying its
    identity; see :func:`relay.engine.contacts.addresses.add_address`); an erased address
    is refused."""
    from relay.engine.verbs.new_conversation import check_timezone, clean_consent

    address = normalise(rt, contact)
    if timezone is not None:
        check_timezone(timezone)
    others = contacts.checked_addresses(partial(address_for, rt), addresses or {})
    consent = clean_consent(consent)
    with rt.store.transaction() as session:
        privacy.refuse_erased(session, rt, address)
        person = _contact(rt, session, address, create=True)
        if timezone is not None:
            person.timezone = timezone
            person.updated_at = rt.now()
        if consent is not None and consent != person.consent:
            person.consent, person.consent_at = consent, rt.now()
            person.updated_at = rt.now()
        given = contacts.set_addresses(session, person, others, rt.now())
        args: dict[str, Any] = {"timezone": timezone, "consent": consent}
        if given:
            args["addresses"] = given
        _audit_contact(rt, session, "contact set", address, **args)
        return _contact_view(rt, session, person)


def _audit_contact(rt: Context, session: Session, command: str, address: str, **args: Any) -> None:
    """A contact-level command: in the log without an instance (``relay events``)."""
    args = {"contact": address, **args}
    audit.record(session, command, None, args, rt.now(), actor=rt.who())


def _legal_hours(config: Config, person: Contact) -> str | None:
    """Which legal hours hold proactive messages to the contact, and why."""
    from relay.engine.conversation import policy

    try:
        window = policy.window_of(None, config)
        return policy.hold_for(window, person.address, person.timezone, config).describe()
    except RelayError as exc:
        return f"cannot be worked out: {exc.message}"


def _mark(session: Session, person: Contact) -> UndeliverableMark | None:
    """The contact's undeliverable mark with the bounce that set it, or None."""
    if person.undeliverable_at is None:
        return None
    from relay.store.models import Message

    message = (
        session.get(Message, person.undeliverable_message_id)
        if person.undeliverable_message_id is not None
        else None
    )
    return UndeliverableMark(
        at=person.undeliverable_at,
        reason=person.undeliverable_reason,
        bounce_reason=person.bounce_reason,
        message_id=person.undeliverable_message_id,
        instance_id=message.instance_id if message else None,
        bounced_at=message.delivery_updated_at if message else None,
        error=message.last_error if message else None,
    )
