"""``relay show`` says when the next message will actually go, and why it waits
(``InstanceView.next_message``, filled by relay/engine/conversation/forecast.py)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from backends import SQLITE_ONLY
from daemon_support import OTHER, PHONE, at, pulse, start_waiting
from engine_relay import EngineRelay as Relay

from relay.channels import base as channels_base
from relay.channels.base import ChannelError, Outbound

HOUR = timedelta(hours=1)


def next_message(relay: Relay, instance_id: str) -> str | None:
    return relay.get(instance_id).next_message


def test_waiting_for_a_reply_names_the_follow_up_and_its_time(relay: Relay, clock: Any) -> None:
    clock.set(at("2026-01-05 12:00"))
    iid = start_waiting(relay, max_followups=2)
    assert next_message(relay, iid) == "follow-up 1/2 at 2026-01-05 13:00:00Z"
    clock.advance(HOUR)
    pulse(relay)
    assert next_message(relay, iid) == "follow-up 2/2 at 2026-01-05 14:00:00Z"
    clock.advance(HOUR)
    pulse(relay)
    assert next_message(relay, iid) == (
        "none: abandons at 2026-01-05 15:00:00Z unless the contact replies"
    )
    clock.advance(HOUR)
    pulse(relay)
    assert relay.get(iid).state == "ABANDONED"
    assert next_message(relay, iid) is None


def test_an_overdue_heartbeat_says_so(relay: Relay, clock: Any) -> None:
    clock.set(at("2026-01-05 12:00"))
    iid = start_waiting(relay)
    clock.advance(3 * HOUR)
    assert next_message(relay, iid) == (
        "follow-up 1/5 due since 2026-01-05 13:00:00Z (the daemon or `relay tick` runs it)"
    )


def test_a_follow_up_held_for_the_sending_window(relay: Relay, clock: Any) -> None:
    relay.set_contact(PHONE, timezone="Europe/Madrid")
    clock.set(at("2026-03-28 16:30"))
    iid = start_waiting(relay, window="09:00-18:00")
    assert next_message(relay, iid) == (
        "follow-up 1/5 due 2026-03-28 17:30:00Z, "
        "held for the sending window until 2026-03-29 07:00:00Z"
    )
    clock.advance(HOUR)
    pulse(relay)  # the heartbeat is deferred to the opening
    assert next_message(relay, iid) == (
        "follow-up 1/5 at 2026-03-29 07:00:00Z, when the sending window opens"
    )


def test_a_first_message_held_for_the_sending_window(relay: Relay, clock: Any) -> None:
    clock.set(at("2026-01-05 20:00"))
    iid = relay.start(PHONE, "Confirm the date", ["Which day?"], window="mon-fri 09:00-17:00").id
    assert next_message(relay, iid) == (
        "first message due now (the daemon or `relay tick` runs it)"
    )
    pulse(relay)
    assert next_message(relay, iid) == (
        "first message held for the sending window until 2026-01-06 09:00:00Z"
    )


def test_a_delivery_held_by_the_rate_limit(
    make_relay_here: Callable[..., Relay], clock: Any
) -> None:
    relay = make_relay_here(**{"channels.console.rate": "1/minute"})
    clock.set(at("2026-01-05 12:00"))
    first = relay.start(PHONE, "A", ["Q?"]).id
    second = relay.start(OTHER, "B", ["Q?"]).id
    pulse(relay)
    assert next_message(relay, first) == "follow-up 1/5 at 2026-01-05 12:30:00Z"
    assert next_message(relay, second) == (
        "held by the rate limit of channel console until 2026-01-05 12:01:00Z"
    )


class FlakyChannel:
    name = "flaky"

    def __init__(self) -> None:
        self.failures = 1

    def send(self, message: Outbound) -> str:
        if self.failures:
            self.failures -= 1
            raise ChannelError("provider answered 503")
        return "ok"

    def poll(self, cursor: str | None) -> Any:
        from relay.channels.base import Incoming

        return Incoming()


@pytest.fixture
def flaky() -> Iterator[FlakyChannel]:
    channel = FlakyChannel()
    channels_base.register_channel("flaky", lambda name, settings: channel)
    yield channel
    channels_base.CHANNELS.unregister("flaky")


def test_a_delivery_waiting_for_a_retry(
    make_relay_here: Callable[..., Relay], clock: Any, flaky: FlakyChannel
) -> None:
    relay = make_relay_here(**{"channels.sms.type": "flaky", "outbox.backoff": "30s"})
    clock.set(at("2026-01-05 12:00"))
    iid = relay.start(PHONE, "A", ["Q?"], channel="sms").id
    assert pulse(relay).delivery.retried == 1
    assert next_message(relay, iid) == (
        "waiting for delivery (attempt 2, retry at 2026-01-05 12:00:30Z)"
    )
    clock.advance(timedelta(seconds=30))
    assert pulse(relay).delivery.sent == 1
    # The countdown runs from the delivery, which came 30 s late.
    assert next_message(relay, iid) == "follow-up 1/5 at 2026-01-05 12:30:30Z"


def test_paused_and_snoozed(relay: Relay, clock: Any) -> None:
    clock.set(at("2026-01-05 12:00"))
    iid = start_waiting(relay)
    clock.advance(timedelta(minutes=20))
    relay.pause(iid)
    assert next_message(relay, iid) == (
        "paused: nothing is sent until `relay resume`; "
        "the follow-up countdown resumes with 40m left"
    )
    relay.resume(iid)
    relay.pause(iid, until=at("2026-01-06 09:00"))
    assert next_message(relay, iid) == (
        "paused until 2026-01-06 09:00:00Z (snooze); the follow-up countdown resumes with 40m left"
    )


def test_queued_behind_the_live_conversation(relay: Relay, clock: Any) -> None:
    live = start_waiting(relay)
    queued = relay.start(PHONE, "Another matter", ["Q?"]).id
    assert next_message(relay, queued) == f"waits until the contact's live conversation {live} ends"


def test_waiting_for_a_person(relay: Relay, clock: Any) -> None:
    iid = start_waiting(relay)
    relay.receive(PHONE, "Can I talk to a human please?")
    pulse(relay)
    assert relay.get(iid).state == "NEEDS_HUMAN_INTERVENTION"
    assert next_message(relay, iid) == (
        "waits for a person: `relay send` or `relay resume` "
        "(the contact asked for a person: Can I talk to a human please?)"
    )


@SQLITE_ONLY
def test_relay_show_prints_the_next_message(
    make_relay_here: Callable[..., Relay], clock: Any, cli: Callable[..., Any]
) -> None:
    clock.set(datetime.now(UTC).replace(microsecond=0))
    relay = make_relay_here()
    iid = start_waiting(relay, heartbeat="2h")
    due = (clock.now() + 2 * HOUR).strftime("%Y-%m-%d %H:%M:%SZ")

    shown = cli("show", iid)
    assert shown.exit_code == 0, shown
    # One time format on the whole card (it mixed ISO's "T" form with this one).
    assert not re.search(r"\d{4}-\d\d-\d\dT\d", shown.stdout)
    assert len(re.findall(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ", shown.stdout)) >= 3
    [line] = [line for line in shown.stdout.splitlines() if line.startswith("next message")]
    assert line.split("  ", 1)[1].strip() == f"follow-up 1/5 at {due}"

    as_json = cli("show", iid, "--json")
    assert as_json.json()["next_message"] == f"follow-up 1/5 at {due}"
