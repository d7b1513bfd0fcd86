"""Twilio send pacing shared across processes: two stores (two engines, as two
daemons have) on one database, the loopback Twilio API, a clock that records
the waits instead of sleeping."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from messaging_fakes import ACCOUNT, FakeTwilio

from relay.runner.pulse import Pulse
from relay.store import pacing
from relay.store.database import Store, make_engine
from relay.testing import FakeClock

NUMBER = "+15550001111"
MICRO = 1_000_000


class RecordingClock(FakeClock):
    def __init__(self) -> None:
        super().__init__()
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 6))
        super().sleep(seconds)


def sms_settings(fake: FakeTwilio) -> dict[str, Any]:
    return {
        "channels.sms.type": "sms",
        "channels.sms.account_sid": ACCOUNT,
        "channels.sms.auth_token_env": "TWILIO_TOKEN",
        "channels.sms.from": NUMBER,
        "channels.sms.public_url": "https://relay.example.org",
        "channels.sms.api_url": fake.base_url,
        "channels.sms.segments_per_second": 1,
    }


def test_two_daemons_on_one_number_share_its_pace(
    make_relay: Callable[..., Any], db_url: str, twilio_api: FakeTwilio
) -> None:
    clock = RecordingClock()
    first = make_relay(db_url, clock, **sms_settings(twilio_api))
    second = make_relay(db_url, clock, **sms_settings(twilio_api))
    first.start("+15551230001", "Confirm", ["Which day?"], channel="sms")
    Pulse(first, "daemon-1").run()
    second.start("+15551230002", "Confirm", ["Which day?"], channel="sms")
    Pulse(second, "daemon-2").run()  # its own process-local pacer would not wait
    first.start("+15551230003", "Confirm", ["Which day?"], channel="sms")
    Pulse(first, "daemon-1").run()
    assert len(twilio_api.sent) == 3
    # One segment a second: the second daemon waits for the first's slot, and the
    # first then waits for the second's, though each sent once just before.
    assert clock.sleeps == [1.0, 1.0]


def test_a_channel_without_pacing_books_nothing(
    make_relay: Callable[..., Any], db_url: str, twilio_api: FakeTwilio
) -> None:
    clock = RecordingClock()
    settings = {**sms_settings(twilio_api), "channels.sms.segments_per_second": 0}
    relay = make_relay(db_url, clock, **settings)
    for phone in ("+15551230001", "+15551230002"):
        relay.start(phone, "Confirm", ["Which day?"], channel="sms")
    Pulse(relay, "daemon").run()
    assert len(twilio_api.sent) == 2 and clock.sleeps == []


def test_concurrent_bookings_get_distinct_consecutive_slots(db_url: str) -> None:
    """Two engines booking at once from two threads: the UPDATE ... RETURNING is
    atomic on both databases, so no slot is handed out twice and none is skipped."""
    stores = [Store(make_engine(db_url)) for _ in range(2)]
    starts: list[int] = []
    lock = threading.Lock()

    def book(store: Store) -> None:
        for _ in range(15):
            with store.transaction() as session:
                start = pacing.book(session, "sms", NUMBER, 0, MICRO)
            with lock:
                starts.append(start)

    threads = [threading.Thread(target=book, args=(s,)) for s in stores]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        for store in stores:
            store.dispose()
    assert sorted(starts) == [n * MICRO for n in range(30)]


def test_a_slot_is_booked_from_now_when_the_number_was_idle(db_url: str) -> None:
    store = Store(make_engine(db_url))
    try:
        with store.transaction() as session:
            assert pacing.book(session, "sms", NUMBER, 10 * MICRO, 2 * MICRO) == 10 * MICRO
            assert pacing.book(session, "sms", NUMBER, 11 * MICRO, MICRO) == 12 * MICRO
            # Idle past its free time: the next slot starts now, not in the past.
            assert pacing.book(session, "sms", NUMBER, 20 * MICRO, MICRO) == 20 * MICRO
            assert pacing.book(session, "whatsapp", NUMBER, 20 * MICRO, MICRO) == 20 * MICRO
    finally:
        store.dispose()
