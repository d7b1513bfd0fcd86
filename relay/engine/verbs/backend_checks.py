"""Checks made before a conversation is created: could its channel, agent and
window ever work, and can the channel reach the contact (its bound chat counts)?

``relay start`` and ``relay import`` (:mod:`relay.engine.verbs.starting`) refuse
what could never work before writing anything (exit 2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relay.core.errors import ConfigError, InvalidInput
from relay.engine.runtime import Context, Runtime
from relay.store import contacts


def address_problem(rt: Context, channel: str, address: str) -> str | None:
    """Why ``channel`` cannot reach ``address`` (an email channel and a phone
    number), or None; a contact's bound chat on the channel counts (asked only
    when the address itself is refused, so an import costs nothing more)."""
    check = getattr(built_channel(rt, channel), "address_problem", None)
    if not callable(check):
        return None
    problem = check(address)
    if problem:
        where = reach(rt, channel, address)
        problem = check(where) if where != address else problem
    return problem


def built_channel(rt: Context, name: str) -> Any:
    """Channel ``name`` built from its section, once per name (for checks and
    links; the dispatcher builds its own)."""
    from relay.channels.base import make_channel
    from relay.engine.runtime import channel_settings

    built = rt.channels.get(name)
    if built is None:
        built = make_channel(name, channel_settings(rt.config, name))
        rt.channels[name] = built
    return built


def reach(rt: Runtime, channel: str, address: str) -> str:
    """Where ``channel`` reaches the contact ``address``: its bound chat, if any."""
    from relay.engine.contacts.addresses import reach

    with rt.store.read_transaction() as session:
        person = contacts.by_address(session, address)
        if person is None:
            return address
        return reach(session, channel, person.id, address)


def channel_type(rt: Runtime, channel: str) -> str:
    """The type of channel ``channel`` (what its backend is): how it writes addresses
    (a WhatsApp ``wa_id`` carries its country code without ``+``)."""
    from relay.engine.runtime import channel_kind

    return channel_kind(rt.config, channel)


def check_backends(
    rt: Runtime, channel: str, agent: str, window: str | None, address: str | None = None
) -> None:
    """Refuse what could never work before anything is created (exit 2): unknown
    names, a missing secret, an address the channel cannot reach."""
    from relay.agents.base import AGENTS, agent_names
    from relay.channels.base import CHANNELS, channel_kinds
    from relay.core.windows import parse_window
    from relay.engine.runtime import channel_kind, setup_problems

    if not AGENTS.has(agent):
        raise InvalidInput(f"unknown agent {agent!r} (known: {', '.join(agent_names())})")
    kind = channel_kind(rt.config, channel)
    if not CHANNELS.has(kind):
        raise InvalidInput(
            f"unknown channel {channel!r}: add a [channels.{channel}] section "
            f"with a type ({', '.join(channel_kinds())})"
        )
    spec = window if window is not None else rt.config.settings.defaults.window
    if spec:
        parse_window(str(spec))
    problems = setup_problems(rt.config, channel, agent, address)
    if problems:
        raise ConfigError("; ".join(problems))


def template(
    rt: Runtime, channel: str, sid: str | None, variables: Mapping[str, str] | None
) -> dict[str, Any] | None:
    from relay.core.templates import content_template
    from relay.engine.runtime import channel_kind

    found = content_template(sid, variables)
    kind = channel_kind(rt.config, channel)
    if found is not None and kind != "whatsapp":
        raise InvalidInput(
            f"a WhatsApp template is for whatsapp channels; channel {channel} is {kind}"
        )
    return found
