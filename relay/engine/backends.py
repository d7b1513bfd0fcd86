"""Building agents and channels from the configuration, and asking them what is wrong.

``relay start`` asks before it creates anything, and ``relay doctor`` asks for
every configured backend: a conversation created on a channel whose secret is
missing would only fail later, in the daemon, where nobody is watching.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from relay.channels.base import Channel, make_channel
from relay.config import Config
from relay.core.errors import RelayError
from relay.engine.outbox.pacing import share_pacing

if TYPE_CHECKING:
    from relay.engine.runtime import Runtime


def channel_settings(config: Config, name: str) -> dict[str, Any]:
    settings: dict[str, Any] = dict(config.section(f"channels.{name}"))
    settings["_data_dir"] = str(config.data_dir)
    return settings


def channel_kind(config: Config, name: str) -> str:
    """The backend channel ``name`` uses: its section's ``type``, else the name
    itself (``[channels.console]`` needs no type; ``[channels.sales-mail]`` does)."""
    return str(config.get(f"channels.{name}.type") or name)


def agent_settings(config: Config, name: str) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "timeout": config.settings.agent.timeout.total_seconds(),
        "_data_dir": str(config.data_dir),
        "base_dir": str(config.base_dir),
    }
    settings.update(config.section(f"agent.{name}"))
    return settings


def channel_names(config: Config) -> list[str]:
    names = {config.settings.defaults.channel}
    names.update(k.split(".", 1)[0] for k in config.section("channels"))
    return sorted(names)


def channels_of_type(config: Config, kind: str) -> list[str]:
    """The channels whose backend is ``kind``, by their type, not their name
    (``[channels.slow] type = "console"`` is a console channel); ``kind`` itself
    is one when no section gives that name another type."""
    names = set(channel_names(config)) | {kind}
    return sorted(name for name in names if channel_kind(config, name) == kind)


def setup_problems(config: Config, channel: str, agent: str, address: str | None) -> list[str]:
    """What would stop a conversation on ``channel`` with ``agent`` (to ``address``)."""
    return channel_problems_of(config, channel, address) + agent_problems_of(config, agent)


def channel_problems_of(config: Config, channel: str, address: str | None = None) -> list[str]:
    from relay.channels.base import channel_problems, make_channel

    try:
        return channel_problems(make_channel(channel, channel_settings(config, channel)), address)
    except RelayError as exc:
        return [exc.message]


def agent_problems_of(config: Config, agent: str) -> list[str]:
    from relay.agents.base import make_agent

    try:
        check = getattr(make_agent(agent, agent_settings(config, agent)), "check", None)
        return list(check()) if callable(check) else []
    except RelayError as exc:
        return [exc.message]


@dataclass
class Channels:
    """Channel instances built once per process from ``[channels.NAME]`` sections."""

    relay: Runtime
    _built: dict[str, Channel] = field(default_factory=dict)

    def get(self, name: str) -> Channel:
        if name not in self._built:
            built = make_channel(name, channel_settings(self.relay.config, name))
            share_pacing(self.relay, name, built)
            _share_regions(self.relay, built)
            self._built[name] = built
        return self._built[name]

    def names(self) -> list[str]:
        return channel_names(self.relay.config)

    def threads(self, name: str) -> bool:
        """Whether channel ``name`` reads ``Outbound.thread`` (a channel says not with
        ``threads = False``): the outbox reads no thread for one that does not."""
        try:
            return bool(getattr(self.get(name), "threads", True))
        except Exception:  # a channel that cannot be built fails its sends later
            return True


def _share_regions(relay: Runtime, channel: Any) -> None:
    """Give a channel that reads dates in what contacts write (``regions_from``) the
    contact's region: ``4/5`` in a return date is April 5 in the US, 4 May elsewhere."""
    take = getattr(channel, "regions_from", None)
    if callable(take):
        take(partial(contact_region, relay))


def contact_region(relay: Runtime, address: str) -> str | None:
    """The region of the contact writing from ``address``: that of their time zone,
    else of the configured contacts' time zone (``[defaults] timezone``); None for
    none (``UTC``), and the mail's language decides."""
    from relay.core.zone_regions import region_of_zone
    from relay.store.queries import contact_by_address

    with relay.store.read_transaction() as session:
        contact = contact_by_address(session, address.strip().lower())
        zone = contact.timezone if contact is not None else None
    return region_of_zone(zone) or region_of_zone(relay.config.settings.defaults.timezone)
