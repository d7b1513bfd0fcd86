"""relay's public Python API: the one front door for a program.

Everything the ``relay`` command does, a program can do through :class:`Relay`
(the CLI is one of its callers)::

    from relay.api import Relay

    with Relay.open("relay.toml") as relay:
        started = relay.start("+15551230001", "Confirm the delivery", ["Which day suits you?"])
        print(started.id, started.state, started.first_message_status)
        while relay.instance(started.id).state not in ("COMPLETED", "ABANDONED", "FAILED"):
            relay.run_due()  # `relay tick`: heartbeats, turns, deliveries (or run `relay daemon`)
        for message in relay.transcript(started.id):
            print(message.author, message.text)

Errors are :class:`RelayError` subclasses that speak the domain (fields, not
flags); views are frozen dataclasses with ``to_json()``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from relay.config import Config, load_config
from relay.core.clock import Clock
from relay.core.errors import ConfigError
from relay.engine.contacts import addresses
from relay.engine.conversation.audit import OPERATOR
from relay.engine.runtime import Context
from relay.engine.verbs import contact_verbs, conversations, lookups, privacy, starting
from relay.engine.verbs import incoming as incoming_verbs
from relay.engine.views.events import EventView
from relay.engine.views.instances import ContactView, InstanceView, MessageView, TransitionView
from relay.engine.views.reports import ContactRow, InboxItem, ResultView, StatsView, WatchRow
from relay.engine.views.status import StatusView
from relay.public import *  # noqa: F403 (the errors, views and functions a program uses)
from relay.public import NAMES
from relay.public import __getattr__ as __getattr__
from relay.store.database import Store
from relay.store.opening import open_store

if TYPE_CHECKING:
    from relay.channels.base import Incoming
    from relay.engine.contacts.addresses import ChatLink
    from relay.engine.inbound.ingest import IngestReport
    from relay.engine.verbs.campaigns import ImportReport
    from relay.engine.verbs.doctor import Finding
    from relay.engine.verbs.drafts import DraftView
    from relay.engine.verbs.optout_lists import OptOutImport
    from relay.engine.verbs.waiting import WaitOutcome
    from relay.runner.pulse import PulseReport

__all__ = [*NAMES, "Relay"]


class Relay:
    """Conversation commands over one store, with an injectable clock; open it with
    :meth:`open` and close it (or use it as a context manager): it holds a connection
    pool. Each verb hands the runtime (:class:`~relay.engine.runtime.Context`) to a
    function of :mod:`relay.engine.verbs` (see docs/architecture.md)."""

    def __init__(self, store: Store, config: Config, clock: Clock | None = None) -> None:
        self._rt = Context(store, config, clock)

    @classmethod
    def open(cls, config: Config | str | Path | None = None, clock: Clock | None = None) -> Relay:
        """Open the store ``config`` names: a :class:`Config`, a ``relay.toml`` path, or None
        for what ``relay`` uses here (RELAY_CONFIG, ./relay.toml, RELAY_* variables, defaults)."""
        if not isinstance(config, Config):
            config = load_config(config)
        return cls(
            open_store(config.database_url, create=config.uses_default_database), config, clock
        )

    def close(self) -> None:
        self.store.dispose()

    def __enter__(self) -> Relay:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def store(self) -> Store:
        return self._rt.store

    @property
    def config(self) -> Config:
        return self._rt.config

    @property
    def clock(self) -> Clock:
        return self._rt.clock

    @property
    def actor(self) -> str | None:
        """Who runs operator commands, for the audit log (None: the OS user)."""
        return self._rt.actor

    @actor.setter
    def actor(self, name: str | None) -> None:
        self._rt.actor = name

    def now(self) -> datetime:
        return self._rt.now()

    def normalise(self, contact: str) -> str:
        """``contact`` as relay stores it (E.164, a lower-cased email address)."""
        return addresses.normalise(self._rt, contact)

    def start(
        self,
        contact: str,
        objective: str,
        todos: Sequence[str | Mapping[str, Any]],
        *,
        defer: bool = False,
        **options: Any,
    ) -> InstanceView:
        """Create a conversation and, unless ``defer``, run its first turn now (``options``:
        :func:`.starting.prepare`; ``first_message_status``: :func:`.starting._first_turn`)."""
        return starting.start(self._rt, contact, objective, todos, defer=defer, **options)

    def import_csv(
        self, path: str | Path, objective: str, todos: Sequence[str], **options: Any
    ) -> ImportReport:
        """A conversation per CSV row (``relay import``); ``options``: see ``csv_import``."""
        from relay.engine.verbs.csv_import import import_csv

        return import_csv(self._rt, path, objective, todos, **options)

    def get(self, instance_id: str) -> InstanceView:
        return conversations.get(self._rt, instance_id)

    instance = get  # the plain name a program reads best
    export_contact = privacy.export_contact  # everything held about a person, as JSON
    erase_contact = privacy.erase_contact  # delete it; keep a keyed hash of each address

    def instances(
        self,
        *,
        state: str | None = None,
        contact: str | None = None,
        limit: int = 50,
        campaign: str | None = None,
    ) -> list[InstanceView]:
        """Instances newest first, optionally filtered by state, contact and campaign."""
        return conversations.instances(
            self._rt, state=state, contact=contact, limit=limit, campaign=campaign
        )

    def transcript(self, instance_id: str) -> list[MessageView]:
        return conversations.transcript(self._rt, instance_id)

    def history(self, instance_id: str, *, commands: bool = False) -> list[TransitionView]:
        """The transition log; with ``commands``, the audited operator commands too."""
        return conversations.history(self._rt, instance_id, commands=commands)

    def pause(
        self, instance_id: str, *, reason: str | None = None, until: datetime | None = None
    ) -> InstanceView:
        return conversations.pause(self._rt, instance_id, reason=reason, until=until)

    def resume(self, instance_id: str, *, actor: str = OPERATOR) -> InstanceView:
        return conversations.resume(self._rt, instance_id, actor=actor)

    def cancel(self, instance_id: str, *, reason: str | None = None) -> InstanceView:
        return conversations.cancel(self._rt, instance_id, reason=reason)

    def send(self, instance_id: str, text: str, *, actor: str = OPERATOR) -> MessageView:
        """Queue an operator message (from NEEDS_HUMAN_INTERVENTION, it is the turn)."""
        return conversations.send(self._rt, instance_id, text, actor=actor)

    def retry(self, message_id: int) -> MessageView:
        """Queue a failed delivery, or one of unknown fate, again (its conversation live)."""
        return conversations.retry(self._rt, message_id)

    def deliver(self, message_id: int) -> MessageView:
        """Deliver one queued message now, after what of its conversation is due first."""
        return conversations.deliver(self._rt, message_id)

    def receive(
        self,
        contact: str,
        text: str,
        *,
        channel: str = "cli",
        provider_message_id: str | None = None,
    ) -> MessageView:
        """Store an inbound message and route it to the contact's live conversation."""
        return incoming_verbs.receive(
            self._rt, contact, text, channel=channel, provider_message_id=provider_message_id
        )

    def ingest(
        self,
        channel: str,
        incoming: Incoming,
        *,
        read_from: str | object | None = incoming_verbs.UNREAD,
    ) -> IngestReport:
        """Store what a channel brought in, with its new position, in one transaction."""
        return incoming_verbs.ingest(self._rt, channel, incoming, read_from=read_from)

    def poll(self, channel: str) -> IngestReport:
        """Ask one channel what arrived and store it with its new position."""
        return incoming_verbs.poll(self._rt, channel)

    def contact(self, contact: str) -> ContactView:
        return contact_verbs.contact(self._rt, contact)

    def contact_link(self, channel: str, contact: str) -> ChatLink:
        """The ``t.me/<bot>?start=<token>`` link binding a chat on ``channel`` to ``contact``."""
        return contact_verbs.contact_link(self._rt, channel, contact)

    def opt_out(self, contact: str, *, reason: str = "operator", **kind: str | None) -> ContactView:
        """Opt the contact out: nothing more is sent (``channel_kind``: one kind only)."""
        return contact_verbs.opt_out(self._rt, contact, reason=reason, **kind)

    def opt_in(self, contact: str, **kind: str | None) -> ContactView:
        return contact_verbs.opt_in(self._rt, contact, **kind)

    def import_opt_outs(
        self, text: str, *, column: str | None = None, reason: str = "operator list"
    ) -> OptOutImport:
        """Opt out every address of a do-not-contact list."""
        return contact_verbs.import_opt_outs(self._rt, text, column=column, reason=reason)

    def deliverable(self, contact: str) -> ContactView:
        """Clear the contact's undeliverable mark (audited with the old reason)."""
        return contact_verbs.deliverable(self._rt, contact)

    def set_contact(self, contact: str, **fields: Any) -> ContactView:
        return contact_verbs.set_contact(self._rt, contact, **fields)  # tz, consent, addresses

    def contacts(self, *, campaign: str | None = None, limit: int = 100) -> list[ContactRow]:
        """Contacts newest first, with their fields and conversation counts."""
        return lookups.contacts(self._rt, campaign=campaign, limit=limit)

    def result(self, instance_id: str) -> ResultView:
        """Each todo with its status, answer and the message it came from."""
        return lookups.result(self._rt, instance_id)

    def results(self, instance_ids: Sequence[str]) -> list[ResultView]:
        return lookups.results(self._rt, instance_ids)

    def events(
        self,
        *,
        since: int | str | None = None,
        instance_ids: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        limit: int = 1000,
    ) -> list[EventView]:
        """Events after cursor ``since`` (None: from the start), oldest first."""
        from relay.engine.verbs.program import read_events

        return read_events(
            self._rt, since=since, instance_ids=instance_ids, kinds=kinds, limit=limit
        )

    def wait(
        self,
        instance_ids: Sequence[str],
        *,
        until: str = "done",
        timeout: str | timedelta | None = None,
        since: int | str | None = None,
        require_daemon: bool = False,
        on_warning: Callable[[str], None] | None = None,
        on_poll: Callable[[float], None] | None = None,
    ) -> WaitOutcome:
        """Block until ``until`` holds for the instances (see relay.engine.verbs.waiting)."""
        from relay.engine.verbs.waiting import wait

        return wait(
            self._rt,
            instance_ids,
            until=until,
            timeout=timeout,
            since=since,
            require_daemon=require_daemon,
            on_warning=on_warning,
            on_poll=on_poll,
        )

    def unattended(self) -> list[str]:
        """A warning when work is due and no daemon is alive to do it (else empty)."""
        return lookups.unattended_warnings(self._rt)

    def status(self) -> StatusView:
        return lookups.status(self._rt)

    def stats(
        self, *, campaign: str | None = None, since: str | timedelta | None = None
    ) -> StatsView:
        """The funnel of the conversations started within ``since`` (e.g. 7d)."""
        return lookups.stats(self._rt, campaign=campaign, since=since)

    def watch(
        self,
        *,
        state: str | None = None,
        contact: str | None = None,
        campaign: str | None = None,
        finished: bool = False,
        limit: int = 100,
    ) -> list[WatchRow]:
        """``relay watch``'s rows: needs-human first, then the latest changed."""
        return lookups.watch(
            self._rt,
            state=state,
            contact=contact,
            campaign=campaign,
            finished=finished,
            limit=limit,
        )

    def inbox(self, *, kinds: Sequence[str] | None = None, limit: int = 50) -> list[InboxItem]:
        """Inbound no conversation took (unrouted, late, rejected), newest first."""
        return lookups.inbox(self._rt, kinds=kinds, limit=limit)

    def drafts(self, instance_id: str | None = None) -> list[DraftView]:
        """The agent's drafts awaiting approval, oldest first (``relay drafts``)."""
        from relay.engine.verbs import drafts

        return drafts.pending(self._rt, instance_id)

    def approve(self, message_id: int, *, text: str | None = None) -> MessageView:
        """Queue a draft, or ``text`` in its place (the edit is recorded)."""
        from relay.engine.verbs import drafts

        return drafts.approve(self._rt, message_id, actor=self._rt.who(), text=text)

    def reject(self, message_id: int, *, reason: str) -> MessageView:
        """Discard a draft; the next turn reads ``reason`` (``relay reject``)."""
        from relay.engine.verbs import drafts

        return drafts.reject(self._rt, message_id, actor=self._rt.who(), reason=reason)

    def run_due(self, *, poll: bool = True, owner: str | None = None) -> PulseReport:
        """Do all work due now, once: poll, heartbeats, turns, deliveries (``relay tick``)."""
        from relay.runner.pulse import run_once

        return run_once(self._rt, poll=poll, owner=owner)

    def check(self) -> list[Finding]:
        """Broken invariants and backends that cannot work (``relay doctor``)."""
        from relay.engine.verbs.doctor import examine

        return examine(self._rt)

    def repair(self) -> list[Finding]:
        """Fix what can be fixed safely (``relay doctor --repair``)."""
        from relay.engine.verbs.doctor import repair

        return repair(self._rt)

    def notices(self) -> list[Finding]:
        """What breaks no rule but a person should see (``relay doctor``'s warnings)."""
        from relay.engine.verbs.doctor import notices

        return notices(self._rt)

    def upgrade(self) -> None:
        """Migrate the database to this relay's schema (``relay db upgrade``)."""
        from relay.store.migrate import upgrade

        upgrade(self.store)

    def run_daemon(self) -> None:
        """Be the daemon in this process until SIGTERM/SIGINT (``relay daemon``)."""
        from relay.runner.foreground import run_daemon

        run_daemon(self._rt)

    def serve_http(self, host: str, port: int, *, max_body: int | None = None) -> None:
        """Serve the inbound HTTP endpoint until SIGTERM/SIGINT (``relay serve``)."""
        from relay.runner.foreground import serve

        serve(self._rt, host, port, max_body=max_body)

    def serve_mcp(
        self, *, http: bool = False, host: str | None = None, port: int | None = None
    ) -> None:
        """Serve the verbs as MCP tools on stdio, or over HTTP (``relay mcp [--http]``);
        commands are audited as ``mcp:<user>`` unless :attr:`actor` is set."""
        try:
            from relay.engine.verbs.mcp_server import serve
            from relay.runner import mcp_http
        except ImportError:
            raise ConfigError(
                "relay mcp needs the MCP SDK: pip install 'relay-outreach[mcp]'"
            ) from None
        self._rt.actor = self._rt.actor or f"mcp:{self._rt.who()}"
        mcp_http.serve(self._rt, host, port) if http else serve(self._rt)
