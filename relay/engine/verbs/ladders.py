"""A new conversation's channels settled against its contact's addresses.

``relay start --channel whatsapp,sms,email`` (and an import's ``channels``
column) names a ladder (:mod:`relay.core.ladder`). Before anything is written,
each channel is checked (a missing secret refuses the start, as for one
channel) and matched with the first of the contact's addresses it can reach:
its own address first, then the others (``relay contact set --email ...``, an
import's email/phone/telegram columns). A channel that reaches none is left out;
a ladder left empty refuses the start with each channel's reason. The
conversation starts on the first rung.

One channel on the contact's own address is stored as before (no ladder), so
such conversations cost nothing more; one channel on another of the contact's
addresses is a ladder of one rung.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from relay.core import ladder as ladders
from relay.core.errors import ConfigError, InvalidInput
from relay.engine.contacts import addresses
from relay.engine.contacts.addresses import Address, address_for, kind_of
from relay.engine.verbs import backend_checks
from relay.store import contact_addresses, contacts

if TYPE_CHECKING:
    from relay.engine.runtime import Context
    from relay.engine.verbs.new_conversation import NewConversation
    from relay.store.database import Store
    from relay.store.models import Contact


def channel_list(channel: str) -> tuple[str, ...]:
    """The channel names of ``--channel`` (one, or a comma list)."""
    return ladders.parse_channels(channel)


def fallback_seconds(value: str | timedelta | None, default: timedelta) -> int:
    from relay.core.durations import parse_duration

    try:
        wait = default if value is None else value
        wait = wait if isinstance(wait, timedelta) else parse_duration(wait)
    except InvalidInput as exc:
        raise InvalidInput(f"--fallback-after: {exc.message}") from None
    if wait.total_seconds() <= 0:
        raise InvalidInput("--fallback-after must be longer than 0")
    return int(wait.total_seconds())


def settle(
    rt: Context,
    spec: NewConversation,
    *,
    checked: dict[tuple[str, str], None] | None = None,
    fallback_after: str | timedelta | None = None,
) -> NewConversation:
    """``spec`` with the rung it starts on and its ladder, or refused (exit 2) when
    no channel can reach the contact. ``checked``: the (channel, agent) pairs whose
    backends were checked already (an import checks each once); ``fallback_after``:
    the silence before the next rung (default: ``[defaults] fallback_after``)."""
    wait = fallback_seconds(fallback_after, rt.config.settings.defaults.fallback_after)
    names = spec.channels or (spec.channel,)
    for name in names:
        if checked is None or (name, spec.agent) not in checked:
            backend_checks.check_backends(rt, name, spec.agent, spec.window)
            if checked is not None:
                checked[(name, spec.agent)] = None
    addresses, closed = _addresses(rt.store, spec)
    reaches: list[tuple[str, str | None]] = []
    problems: list[str] = [f"the contact opted out of {kind}" for kind in sorted(closed)]
    for name in names:
        found = _reach(rt, name, [(k, a) for k, a in addresses if k not in closed])
        if isinstance(found, str):
            reaches.append((name, found))
        else:
            problems.append(found[0] if found else f"{name}: no address")
    ladder = ladders.resolve(names, reaches)
    if not ladder:
        raise ConfigError("; ".join(problems))
    own = addresses[0][0]
    if len(names) == 1 and ladder[0].kind == own:
        return replace(spec, channel=ladder[0].channel, ladder=None, fallback_seconds=None)
    return replace(
        spec, channel=ladder[0].channel, ladder=ladders.to_json(ladder), fallback_seconds=wait
    )


def _reach(rt: Context, channel: str, addresses: Sequence[tuple[str, str]]) -> str | list[str]:
    """The kind of the first address ``channel`` reaches, or why it reaches none."""
    problems = []
    for kind, address in addresses:
        problem = backend_checks.address_problem(rt, channel, address)
        if problem is None:
            return kind
        problems.append(problem)
    return problems


def _addresses(store: Store, spec: NewConversation) -> tuple[list[tuple[str, str]], set[str]]:
    """``(kind, address)`` of the contact: the one named first, then its others (held,
    then given with the spec), one per kind; and the kinds it opted out of alone
    (a ladder skips them, :mod:`relay.core.optout_scope`)."""
    found = {kind_of(spec.address): spec.address}
    with store.read_transaction() as session:
        person = contacts.by_address(session, spec.address)
        held = contact_addresses.of_contact(session, person.id) if person is not None else {}
        closed = set(contact_addresses.opt_outs_of(session, person.id)) if person else set()
    for kind, address in (*sorted(held.items(), key=_kind_order), *spec.addresses):
        found.setdefault(kind, address)
    return list(found.items()), closed


def _kind_order(item: tuple[str, str]) -> int:
    return addresses.KINDS.index(item[0]) if item[0] in addresses.KINDS else len(addresses.KINDS)


#: An import's columns giving the contact's other addresses (besides the contact column).
ADDRESS_COLUMNS = ("email", "phone", "telegram")


def row_addresses(
    rt: Context, columns: Mapping[str, str], column: str
) -> tuple[tuple[str, str], ...]:
    """An import row's addresses besides its contact column's, normalised:
    ``(kind, address)``."""
    found = []
    for name, value in columns.items():
        if name != column and value and name.lower() in ADDRESS_COLUMNS:
            address = address_for(rt, value)
            found.append((address.kind, address.value))
    return tuple(found)


def settle_row(
    rt: Context,
    spec: NewConversation,
    checked: dict[tuple[str, str], None],
    fallback_after: str | timedelta | None = None,
) -> tuple[NewConversation, str | None]:
    """An import row's spec settled (:func:`settle`) when it has a ladder or other
    addresses; else as before ladders: its channel checked once per import, and
    why it cannot reach the contact's address (None: it can). ``fallback_after``:
    as for :func:`settle` (``relay import --fallback-after``)."""
    if len(spec.channels) > 1 or spec.addresses:
        return settle(rt, spec, checked=checked, fallback_after=fallback_after), None
    if (spec.channel, spec.agent) not in checked:
        backend_checks.check_backends(rt, spec.channel, spec.agent, spec.window)
        checked[(spec.channel, spec.agent)] = None
    return spec, backend_checks.address_problem(rt, spec.channel, spec.address)


def give_addresses(session: Session, person: Contact, spec: NewConversation, now: datetime) -> None:
    """The other addresses a new conversation brings (an import's columns) go onto
    its contact."""
    for kind, address in spec.addresses:
        addresses.add_address(session, person, Address(address, kind), now)
