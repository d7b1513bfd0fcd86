"""Checks made before a conversation is created: could its channel, agent and
window ever work, and can the channel reach the contact (its bound chat counts)?

A mixin of :class:`relay.engine.verbs.service.Relay` (through ``Starting``): ``relay
start`` and ``relay import`` refuse what could never work before writing
anything (exit 2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relay.config import Config
from relay.core.errors import ConfigError, InvalidInput
from relay.store import queries
from relay.store.database import Store


class BackendChecks:
    """Checks of channels, agents, windows and templates, with channels built once."""

    store: Store
    config: Config
    _built_channels: dict[str, Any]

    def check_backends(self, channel: str, agent: str, window: str | None) -> None:
        """Refuse a channel, agent or window that could never work (exit 2)."""
        self._check_backends(channel, agent, window)

    def address_problem(self, channel: str, address: str) -> str | None:
        """Why ``channel`` cannot reach ``address`` (an email channel and a phone
        number), or None; a contact's bound chat on the channel counts (asked only
        when the address itself is refused, so an import costs nothing more)."""
        check = getattr(self.channel(channel), "address_problem", None)
        if not callable(check):
            return None
        problem = check(address)
        if problem:
            reach = self._reach(channel, address)
            problem = check(reach) if reach != address else problem
        return problem

    def channel(self, name: str) -> Any:
        """Channel ``name`` built from its section, once per name (for checks and
        links; the dispatcher builds its own)."""
        from relay.channels.base import make_channel
        from relay.engine.backends import channel_settings

        built = self._built_channels.get(name)
        if built is None:
            built = make_channel(name, channel_settings(self.config, name))
            self._built_channels[name] = built
        return built

    def _reach(self, channel: str, address: str) -> str:
        """Where ``channel`` reaches the contact ``address``: its bound chat, if any."""
        from relay.engine.contacts import chat_links
        with self.store.read_transaction() as session:
            person = queries.contact_by_address(session, address)
            if person is None:
                return address
            return chat_links.reach(session, channel, person.id, address)

    def _check_backends(
        self, channel: str, agent: str, window: str | None, address: str | None = None
    ) -> None:
        """Refuse what could never work before anything is created (exit 2): unknown
        names, a missing secret, an address the channel cannot reach."""
        from relay.agents.base import AGENTS, agent_names
        from relay.channels.base import CHANNELS, channel_kinds
        from relay.core.windows import parse_window
        from relay.engine.backends import channel_kind, setup_problems

        if not AGENTS.has(agent):
            raise InvalidInput(f"unknown agent {agent!r} (known: {', '.join(agent_names())})")
        kind = channel_kind(self.config, channel)
        if not CHANNELS.has(kind):
            raise InvalidInput(
                f"unknown channel {channel!r}: add a [channels.{channel}] section "
                f"with a type ({', '.join(channel_kinds())})"
            )
        spec = window if window is not None else self.config.settings.defaults.window
        if spec:
            parse_window(str(spec))
        problems = setup_problems(self.config, channel, agent, address)
        if problems:
            raise ConfigError("; ".join(problems))

    def _template(
        self, channel: str, sid: str | None, variables: Mapping[str, str] | None
    ) -> dict[str, Any] | None:
        from relay.core.templates import content_template
        from relay.engine.backends import channel_kind

        template = content_template(sid, variables)
        kind = channel_kind(self.config, channel)
        if template is not None and kind != "whatsapp":
            raise InvalidInput(
                f"a WhatsApp template is for whatsapp channels; channel {channel} is {kind}"
            )
        return template
