"""Sending windows and per-channel rate limits, end to end with the settable clock.

Madrid is on CET (UTC+1) in winter and CEST (UTC+2) in summer; clocks go
forward on Sunday 29 March 2026 and back on Sunday 25 October 2026, so 09:00
in Madrid is 07:00 UTC on the first of those days and 08:00 UTC on the second.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from daemon_support import PHONE, at, outbound, pulse, row, sent_texts, start_waiting
from engine_relay import EngineRelay as Relay

MADRID = "Europe/Madrid"
SECOND = timedelta(seconds=1)


@pytest.mark.parametrize(
    ("first_message", "held_until"),
    [
        # Saturday 17:30 CET; the follow-up falls due at 18:30 CET, after the window.
        pytest.param("2026-03-28 16:30", "2026-03-29 07:00", id="clocks-go-forward"),
        # Saturday 17:30 CEST; due at 18:30 CEST; Sunday 09:00 is CET again.
        pytest.param("2026-10-24 15:30", "2026-10-25 08:00", id="clocks-go-back"),
    ],
)
def test_a_follow_up_outside_the_window_waits_for_nine_in_the_contacts_zone(
    relay: Relay, clock: Any, first_message: str, held_until: str
) -> None:
    relay.set_contact(PHONE, timezone=MADRID)
    clock.set(at(first_message))
    iid = start_waiting(relay, window="09:00-18:00", heartbeat="1h")
    assert len(sent_texts(relay, iid)) == 1  # the first message went: the window was open

    clock.advance(timedelta(hours=1))
    report = pulse(relay)
    assert (report.fired, report.deferred, report.delivery.sent) == (0, 1, 0)
    instance = row(relay, iid)
    assert instance.state == "WAITING_FOR_REPLY"
    assert instance.next_heartbeat_at == at(held_until)

    clock.set(at(held_until) - SECOND)
    assert pulse(relay).fired == 0
    clock.set(at(held_until))
    assert pulse(relay).fired == 1
    follow_up = outbound(relay, iid)[-1]
    assert "reminder 1 of" in follow_up.body
    assert follow_up.sent_at == at(held_until)


def test_a_weekday_window_holds_a_friday_evening_follow_up_until_monday(
    relay: Relay, clock: Any
) -> None:
    relay.set_contact(PHONE, timezone="America/New_York")
    clock.set(at("2026-01-09 21:00"))  # Friday 16:00 in New York (EST, UTC-5)
    iid = start_waiting(relay, window="mon-fri 09:00-17:00", heartbeat="2h")
    clock.advance(timedelta(hours=2))
    assert pulse(relay).deferred == 1
    assert row(relay, iid).next_heartbeat_at == at("2026-01-12 14:00")  # Monday 09:00 EST


def test_the_window_and_zone_can_come_from_the_configuration(
    make_relay_here: Callable[..., Relay], clock: Any
) -> None:
    relay = make_relay_here(**{"defaults.window": "10:00-16:00", "defaults.timezone": "Asia/Tokyo"})
    clock.set(at("2026-01-05 06:00"))  # 15:00 in Tokyo (UTC+9)
    iid = start_waiting(relay, heartbeat="2h")
    assert row(relay, iid).window == "10:00-16:00"
    clock.advance(timedelta(hours=2))
    assert pulse(relay).deferred == 1
    assert row(relay, iid).next_heartbeat_at == at("2026-01-06 01:00")  # 10:00 in Tokyo


def test_a_reply_to_a_contact_who_just_wrote_is_not_held(relay: Relay, clock: Any) -> None:
    relay.set_contact(PHONE, timezone=MADRID)
    clock.set(at("2026-01-05 10:00"))  # 11:00 in Madrid
    iid = start_waiting(relay, window="09:00-18:00")
    clock.set(at("2026-01-05 22:00"))  # 23:00 in Madrid: the window is closed
    relay.receive(PHONE, "Wednesday, if that works")
    report = pulse(relay)
    assert report.delivery.sent == 1 and report.deferred == 0
    reply = outbound(relay, iid)[-1]
    assert reply.body == "Morning or afternoon?"
    assert reply.sent_at == at("2026-01-05 22:00")

    # ...while the follow-up after it waits for the morning.
    clock.advance(timedelta(hours=1))
    assert pulse(relay).deferred == 1
    assert row(relay, iid).next_heartbeat_at == at("2026-01-06 08:00")


def test_a_first_message_outside_the_window_is_held_until_it_opens(
    relay: Relay, clock: Any
) -> None:
    relay.set_contact(PHONE, timezone=MADRID)
    clock.set(at("2026-01-05 22:00"))  # Monday 23:00 in Madrid
    iid = relay.start(PHONE, "Confirm the delivery date", ["Which day?"], window="09:00-18:00").id
    report = pulse(relay)
    assert report.delivery.sent == 0
    assert [t.note for t in report.turns] == [
        "outside the sending window; first message held until 2026-01-06T08:00:00Z"
    ]
    instance = row(relay, iid)
    assert instance.state == "CREATED" and instance.not_before == at("2026-01-06 08:00")
    assert instance.lease_owner is None  # nobody holds it while it waits

    clock.set(at("2026-01-06 08:00") - SECOND)
    assert pulse(relay).idle
    clock.set(at("2026-01-06 08:00"))
    assert pulse(relay).delivery.sent == 1
    assert row(relay, iid).state == "WAITING_FOR_REPLY"
    assert outbound(relay, iid)[0].sent_at == at("2026-01-06 08:00")


def test_an_overnight_window_lets_a_late_follow_up_go(relay: Relay, clock: Any) -> None:
    clock.set(at("2026-01-09 21:30"))  # Friday, UTC
    iid = start_waiting(relay, window="fri 21:00-02:00", heartbeat="3h")
    clock.advance(timedelta(hours=3))  # Saturday 00:30: still Friday's window
    assert pulse(relay).fired == 1
    clock.advance(timedelta(hours=3))  # Saturday 03:30: closed until next Friday 21:00
    assert pulse(relay).deferred == 1
    assert row(relay, iid).next_heartbeat_at == at("2026-01-16 21:00")


def test_a_time_zone_that_no_longer_works_sends_that_instance_to_a_person(
    relay: Relay, clock: Any
) -> None:
    """One bad row must not stop every heartbeat: it goes to NEEDS_HUMAN_INTERVENTION
    with the reason, and the others fire."""
    from sqlalchemy import update

    from relay.store.models import Contact

    broken = start_waiting(relay, window="09:00-18:00")
    fine = start_waiting(relay, "+15551230009", window="09:00-18:00")
    with relay.store.transaction() as session:  # as if edited by hand, or tzdata changed
        session.execute(
            update(Contact).where(Contact.address == PHONE).values(timezone="Atlantis/Lost")
        )
    clock.advance(timedelta(hours=1))
    report = pulse(relay)
    assert report.fired == 1
    assert row(relay, fine).follow_up_count == 1
    instance = row(relay, broken)
    assert instance.state == "NEEDS_HUMAN_INTERVENTION"
    assert relay.history(broken)[-1].reason == (
        "cannot work out the sending window for the follow-up: unknown time zone 'Atlantis/Lost'"
    )


# -- rate limits ----------------------------------------------------------------------------------


def _start_many(relay: Relay, count: int) -> list[str]:
    return [
        relay.start(f"+155512300{n:02d}", "Confirm the delivery date", ["Which day?"]).id
        for n in range(count)
    ]


def test_a_rate_limit_holds_deliveries_then_releases_them_as_the_clock_moves(
    make_relay_here: Callable[..., Relay], clock: Any
) -> None:
    relay = make_relay_here(**{"channels.console.rate": "2/minute"})
    ids = _start_many(relay, 5)
    start = clock.now()
    report = pulse(relay)
    assert (report.delivery.sent, report.delivery.held) == (2, 3)
    # Every turn ran; only the deliveries wait.
    assert all(row(relay, iid).state == "WAITING_FOR_REPLY" for iid in ids)
    held = [m for iid in ids for m in outbound(relay, iid) if m.status == "queued"]
    assert len(held) == 3
    assert {m.next_attempt_at for m in held} == {start + timedelta(minutes=1)}
    assert {m.attempts for m in held} == {0}  # holding is not a failed attempt

    clock.advance(timedelta(minutes=1) - SECOND)
    assert pulse(relay).delivery.sent == 0
    clock.advance(SECOND)  # the first two are a minute old: two more fit
    assert pulse(relay).delivery.sent == 2
    clock.advance(timedelta(seconds=30))
    assert pulse(relay).delivery.sent == 0
    clock.advance(timedelta(seconds=30))
    assert pulse(relay).delivery.sent == 1
    assert all(len(sent_texts(relay, iid)) == 1 for iid in ids)


def test_several_limits_on_one_channel_all_hold(
    make_relay_here: Callable[..., Relay], clock: Any
) -> None:
    relay = make_relay_here(**{"channels.console.rate": "1/second, 3/hour"})
    _start_many(relay, 4)
    sent = [pulse(relay).delivery.sent]
    for _ in range(3):
        clock.advance(SECOND)
        sent.append(pulse(relay).delivery.sent)
    assert sent == [1, 1, 1, 0]  # one a second, then the hourly limit
    clock.advance(timedelta(hours=1))
    assert pulse(relay).delivery.sent == 1


def test_a_rate_limit_counts_per_channel(make_relay_here: Callable[..., Relay], clock: Any) -> None:
    relay = make_relay_here(
        **{
            "channels.console.rate": "1/minute",
            "channels.other.type": "console",
            "channels.other.echo": False,
        }
    )
    relay.start("+15551230001", "A", ["Q?"])
    relay.start("+15551230002", "B", ["Q?"])
    relay.start("+15551230003", "C", ["Q?"], channel="other")
    report = pulse(relay)
    assert (report.delivery.sent, report.delivery.held) == (2, 1)
