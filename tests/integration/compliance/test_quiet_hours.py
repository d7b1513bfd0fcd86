"""Quiet hours by where the contact is, end to end (issue 30, item 2): a Florida
number with an operator window of 8-21 gets nothing after 20:00 local time, a first
message nor a follow-up, and ``relay contact show`` names the rule."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

FLORIDA = "+13055550123"


@pytest.fixture
def relay_api(db_url: str) -> Iterator[Any]:
    from relay.api import Relay
    from relay.config import load_config
    from relay.testing import FakeClock

    # Monday 9 March 2026, 19:30 EDT.
    clock = FakeClock(datetime(2026, 3, 9, 23, 30, tzinfo=UTC))
    config = load_config(overrides={"database.url": db_url, "defaults.window": "08:00-21:00"})
    with Relay.open(config, clock=clock) as relay:
        yield relay


def _sent(relay: Any, instance_id: str) -> list[datetime]:
    return [
        m.sent_at for m in relay.transcript(instance_id)
        if m.direction == "outbound" and m.sent_at is not None
    ]  # fmt: skip


def test_nothing_reaches_a_florida_number_after_8_pm(relay_api: Any) -> None:
    relay, clock = relay_api, relay_api.clock
    started = relay.start(FLORIDA, "Confirm the delivery", ["Which day?"], heartbeat="1h")
    assert started.first_message_status == "sent"  # 19:30 local: open
    # The follow-up falls due at 20:30 local: held, though the window is open until 21:00.
    clock.advance(timedelta(hours=1))
    relay.run_due(poll=False)
    assert len(_sent(relay, started.id)) == 1
    shown = relay.get(started.id).to_json()
    assert "2026-03-10T12:00:00" in str(shown)  # 08:00 EDT the next morning
    clock.set(datetime(2026, 3, 10, 11, 59, tzinfo=UTC))
    relay.run_due(poll=False)
    assert len(_sent(relay, started.id)) == 1
    clock.set(datetime(2026, 3, 10, 12, 0, tzinfo=UTC))
    relay.run_due(poll=False)
    assert _sent(relay, started.id)[1:] == [datetime(2026, 3, 10, 12, 0, tzinfo=UTC)]


def test_a_first_message_after_8_pm_waits_for_the_morning(relay_api: Any) -> None:
    relay, clock = relay_api, relay_api.clock
    clock.advance(timedelta(minutes=30))  # 20:00 EDT
    started = relay.start(FLORIDA, "Confirm the delivery", ["Which day?"])
    assert started.first_message_status is None
    assert "2026-03-10T12:00:00" in (started.first_turn_note or "")
    assert _sent(relay, started.id) == []


def test_contact_show_names_the_rule_and_why(cli: Callable[..., Any]) -> None:
    assert cli("contact", "set", FLORIDA, "--consent", "web form 2026-03-01").exit_code == 0
    shown = cli("contact", "show", FLORIDA, "--json").json()
    assert shown["legal_hours"].startswith("United States (federal) (US): mon-sun 08:00-21:00")
    assert "Florida (US-FL): mon-sun 08:00-20:00" in shown["legal_hours"]
    assert "the number is in US-FL" in shown["legal_hours"]
    text = cli("contact", "show", FLORIDA).stdout
    assert "legal hours" in text and "Florida" in text
    assert cli("contact", "show", "+15551230001", "--json").exit_code == 2  # unknown contact
    cli("contact", "set", "+15551230001", "--tz", "Europe/Madrid")
    assert cli("contact", "show", "+15551230001", "--json").json()["legal_hours"] is None
