"""What the engine's functions need of a relay: the store, the settings and the
clock; and the backends (agents, channels) built from those settings.

Turns, deliveries, heartbeats, unsubscribe links and retention are typed
against :class:`Runtime`: they cannot reach for a command verb (a pause, a
start) by accident, and a test or a program can drive them with anything that
has these three. The operator's verbs take a :class:`Context`, the runtime that
:class:`relay.api.Relay` holds: a Runtime that also knows who runs the commands
(for the audit log) and keeps the channels it built for checks and links.

Channels are built once per process (:class:`Channels`) and handed what the
engine keeps for them: store-kept send slots (:class:`StoreSlots`) and the
contact's region. ``relay start`` asks the backends what is wrong before it
creates anything, and ``relay doctor`` asks for every configured backend: a
conversation created on a channel whose secret is missing would only fail
later, in the daemon, where nobody is watching. Channels, agents and the
store's models are imported where first used, not here: a read command loads
this module and none of them.
"""

from __future__ import annotations

import getpass
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from relay.config import Config
from relay.core.clock import Clock, SystemClock
from relay.core.errors import RelayError
from relay.store.database import Store

if TYPE_CHECKING:
    from relay.agents.base import Agent
    from relay.channels.base import Channel

MICRO = 1_000_000


class Runtime(Protocol):
    """The store, the configuration (with its typed settings) and the clock."""

    @property
    def store(self) -> Store: ...

    @property
    def config(self) -> Config: ...

    @property
    def clock(self) -> Clock: ...

    def now(self) -> datetime: ...


class Context:
    """The runtime of one open relay, passed to each verb."""

    def __init__(
        self, store: Store, config: Config, clock: Clock | None = None, actor: str | None = None
    ) -> None:
        self.store = store
        self.config = config
        self.clock: Clock = clock or SystemClock()
        #: Who runs operator commands, for the audit log (None: the OS user).
        self.actor = actor
        #: Channels built from their sections for checks and links, once per name
        #: (the dispatcher builds its own).
        self.channels: dict[str, Any] = {}

    def now(self) -> datetime:
        return self.clock.now()

    def who(self) -> str:
        if self.actor is None:
            self.actor = os_user()
        return self.actor


def os_user() -> str:
    """The person at the terminal (``--actor`` overrides it)."""
    try:
        return getpass.getuser() or "unknown"
    except Exception:  # no login name (a container without a passwd entry)
        return "unknown"


# -- backends ---------------------------------------------------------------------------


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


def build_agent(config: Config, name: str) -> Agent:
    """Agent ``name`` as configured: its registered factory (``relay.agents.base.AGENTS``,
    a built-in or an entry point) given its settings."""
    from relay.agents.base import AGENTS  # off a read command's imports

    return AGENTS.get(name)(agent_settings(config, name))


def agent_problems_of(config: Config, agent: str) -> list[str]:
    try:
        check = getattr(build_agent(config, agent), "check", None)
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
            from relay.channels.base import make_channel  # off a read command's imports

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
        return self._reads(name, "threads")

    def links(self, name: str) -> bool:
        """Whether channel ``name`` reads ``Outbound.unsubscribe_token`` (a channel says
        not with ``unsubscribe_links = False``): the outbox then reads no token key."""
        return self._reads(name, "unsubscribe_links")

    def _reads(self, name: str, field: str) -> bool:
        try:
            return bool(getattr(self.get(name), field, True))
        except Exception:  # a channel that cannot be built fails its sends later
            return True


def read_position(rt: Runtime, key: str) -> str | None:
    """The stored read position of a channel (its name) or a notify target (its key).
    A read: on SQLite it must not take the write lock (a daemon's poll would queue
    behind its own pulse's writes for a value they never change)."""
    from relay.store import arrivals  # the store's tables: off a read command's imports

    with rt.store.read_transaction() as session:
        return arrivals.channel_cursor(session, key)


def move_position(rt: Runtime, key: str, *, read: str | None, position: str) -> bool:
    """Move a stored read position (a notify target's) from ``read`` to ``position``."""
    from relay.store import arrivals

    with rt.store.transaction() as session:
        return arrivals.advance_cursor(session, key, read=read, position=position, now=rt.now())


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
    from relay.store import contacts

    with relay.store.read_transaction() as session:
        contact = contacts.by_address(session, address.strip().lower())
        zone = contact.timezone if contact is not None else None
    return region_of_zone(zone) or region_of_zone(relay.config.settings.defaults.timezone)


# -- send pacing shared by every process on the store -----------------------------------


class StoreSlots:
    """The ``book`` of a :class:`SegmentPacer`, kept in the store.

    A Twilio number takes so many segments a second (one, for a US long code).
    The channel spaces its own sends (:class:`relay.channels.pacing.SegmentPacer`),
    but two daemons, or a daemon and ``relay send``, on one number would each
    keep their own count and together send too fast. So the engine hands such a
    channel slots kept in the store (``send_slots``): each send books its time in
    one atomic ``UPDATE ... RETURNING`` (:func:`relay.store.pacing.book`) and waits
    until its slot starts. Times are the relay clock's, in seconds since the
    epoch, which every process agrees on (a monotonic clock is per process).
    """

    def __init__(self, relay: Runtime, channel: str) -> None:
        self.relay = relay
        self.channel = channel

    def __call__(self, number: str, now: float, cost: float) -> float:
        from relay.store import pacing

        with self.relay.store.transaction() as session:
            start = pacing.book(
                session, self.channel, number, round(now * MICRO), round(cost * MICRO)
            )
        return start / MICRO


def share_pacing(relay: Runtime, name: str, channel: Any) -> None:
    """Give ``channel`` store-kept send slots when it paces its sends (``pace_with``)."""
    pace = getattr(channel, "pace_with", None)
    if callable(pace):
        pace(StoreSlots(relay, name), lambda: relay.now().timestamp(), sleeper(relay))


def sleeper(relay: Runtime) -> Callable[[float], None]:
    """The relay clock's ``sleep`` when it has one (a test's clock moves itself on
    instead of waiting), else :func:`time.sleep`."""
    sleep = getattr(relay.clock, "sleep", None)
    return sleep if callable(sleep) else time.sleep
