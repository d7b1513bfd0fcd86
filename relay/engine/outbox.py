"""The dispatcher: delivers outbox rows through channels, at most once each.

A row is leased and marked ``sending`` (attempt counted) in one transaction,
the channel is called outside any transaction, and the result is written in a
third. A crash between the call and the write leaves the row ``sending``;
when its lease runs out it is sent again with the same idempotency key, which
the channel uses to recognise the duplicate. The contact's opt-out is checked
again at delivery time, not only when the message was written.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from relay.channels.base import Channel, ChannelError, Outbound, make_channel
from relay.core.durations import parse_duration
from relay.core.errors import RelayError
from relay.core.states import TRANSITIONS, Event, State
from relay.core.values import MessageStatus
from relay.engine import transitions
from relay.engine.rates import RateLimits
from relay.engine.views import MessageView
from relay.store import claims
from relay.store.models import Contact, Message

if TYPE_CHECKING:
    from relay.engine.service import Relay

log = logging.getLogger("relay.outbox")

SEND_LEASE = timedelta(minutes=2)


@dataclass
class DeliveryReport:
    sent: int = 0
    retried: int = 0
    failed: int = 0
    blocked: int = 0
    held: int = 0

    def add(self, other: DeliveryReport) -> None:
        self.sent += other.sent
        self.retried += other.retried
        self.failed += other.failed
        self.blocked += other.blocked
        self.held += other.held


@dataclass
class Channels:
    """Channel instances built once per process from ``[channels.NAME]`` sections."""

    relay: Relay
    _built: dict[str, Channel] = field(default_factory=dict)

    def get(self, name: str) -> Channel:
        if name not in self._built:
            settings: dict[str, Any] = dict(self.relay.config.section(f"channels.{name}"))
            settings["_data_dir"] = str(self.relay.config.data_dir)
            self._built[name] = make_channel(name, settings)
        return self._built[name]

    def names(self) -> list[str]:
        config = self.relay.config
        names = {str(config.get("defaults.channel") or "console")}
        names.update(k.split(".", 1)[0] for k in config.section("channels"))
        return sorted(names)


@dataclass
class Dispatcher:
    relay: Relay
    channels: Channels

    def __post_init__(self) -> None:
        self.limits = RateLimits(self.relay.config)
        base = parse_duration(str(self.relay.config.get("outbox.backoff") or "30s"))
        self.backoff = base
        self.max_attempts = max(1, int(self.relay.config.get("outbox.max_attempts") or 5))

    def deliver_due(
        self, limit: int, *, message_id: int | None = None, instance_id: str | None = None
    ) -> DeliveryReport:
        report = DeliveryReport()
        with self.relay.store.transaction() as session:
            now = self.relay.now()
            batch = claims.claim_outbox(
                session, now, SEND_LEASE, limit, message_id=message_id, instance_id=instance_id
            )
            ready = self._screen(session, batch, now, report)
        for outbound, channel_name in ready:
            self._deliver(outbound, channel_name, report)
        return report

    def _screen(
        self, session: Session, batch: list[Message], now: datetime, report: DeliveryReport
    ) -> list[tuple[Outbound, str]]:
        """Block opted-out contacts and hold what a rate limit does not allow yet."""
        ready = []
        for message in batch:
            contact = session.get(Contact, message.contact_id)
            assert contact is not None
            if contact.opted_out_at is not None:
                message.status = MessageStatus.BLOCKED.value
                message.last_error = "contact opted out"
                message.next_attempt_at = None
                report.blocked += 1
                continue
            channel = message.channel or "console"
            later = self.limits.hold_until(session, channel, now)
            if later is not None:
                message.status = MessageStatus.QUEUED.value
                message.attempts -= 1
                message.next_attempt_at = later
                report.held += 1
                continue
            self.limits.count(channel)
            ready.append(
                (
                    Outbound(
                        message_id=message.id,
                        instance_id=message.instance_id,
                        to=contact.address,
                        text=message.body,
                        idempotency_key=message.idempotency_key or str(message.id),
                    ),
                    channel,
                )
            )
        return ready

    def _deliver(self, outbound: Outbound, channel_name: str, report: DeliveryReport) -> None:
        try:
            provider_id = self.channels.get(channel_name).send(outbound)
        except ChannelError as exc:
            self._failed(outbound, str(exc.message), transient=exc.transient, report=report)
            return
        except RelayError as exc:
            self._failed(outbound, exc.message, transient=False, report=report)
            return
        except Exception as exc:
            self._failed(outbound, f"{type(exc).__name__}: {exc}", transient=True, report=report)
            return
        with self.relay.store.transaction() as session:
            message = session.get(Message, outbound.message_id)
            assert message is not None
            message.status = MessageStatus.SENT.value
            message.provider_message_id = provider_id
            message.sent_at = self.relay.now()
            message.next_attempt_at = None
            message.last_error = None
        log.info(
            "message %s to %s sent on %s (%s)",
            outbound.message_id,
            outbound.to,
            channel_name,
            outbound.instance_id or "-",
        )
        report.sent += 1

    def _failed(
        self, outbound: Outbound, error: str, *, transient: bool, report: DeliveryReport
    ) -> None:
        with self.relay.store.transaction() as session:
            message = session.get(Message, outbound.message_id)
            assert message is not None
            now = self.relay.now()
            message.last_error = error
            if transient and message.attempts < self.max_attempts:
                delay = self.backoff * (2 ** (message.attempts - 1))
                message.status = MessageStatus.QUEUED.value
                message.next_attempt_at = now + delay
                report.retried += 1
                log.warning(
                    "message %s attempt %s failed (%s); retry in %ss",
                    message.id,
                    message.attempts,
                    error,
                    int(delay.total_seconds()),
                )
                return
            message.status = MessageStatus.FAILED.value
            message.next_attempt_at = None
            report.failed += 1
            log.error(
                "message %s failed after %s attempt(s): %s", message.id, message.attempts, error
            )
            self._escalate(session, message, error, now)

    def _escalate(self, session: Session, message: Message, error: str, now: datetime) -> None:
        """A message that cannot be delivered needs a person."""
        if message.instance_id is None:
            return
        instance = claims.lock_instance(session, message.instance_id)
        if instance is None or State(instance.state) not in _ESCALATABLE:
            return
        transitions.apply_event(
            session,
            instance,
            Event.REQUEST_INTERVENTION,
            now=now,
            actor="dispatcher",
            reason=f"delivery of message {message.id} failed: {error}",
        )


_ESCALATABLE = frozenset(s for s in State if Event.REQUEST_INTERVENTION in TRANSITIONS[s])


def deliver_one(relay: Relay, message_id: int) -> MessageView:
    """Try to deliver one message now (``relay send``); leave it queued if it cannot go."""
    dispatcher = Dispatcher(relay, Channels(relay))
    dispatcher.deliver_due(1, message_id=message_id)
    with relay.store.transaction() as session:
        message = session.get(Message, message_id)
        assert message is not None
        contact = session.get(Contact, message.contact_id)
        assert contact is not None
        return MessageView.build(message, contact.address)
