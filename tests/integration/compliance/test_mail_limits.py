"""Email that providers accept (issue 30, item 5): per recipient-domain throttles
and a mailbox's warm-up ramp hold deliveries in the outbox until they fit, and a
held message's follow-up still counts its silence from when it went out."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from relay.core.errors import ConfigError
from relay.engine.outbox.rates import group_for, parse_domain_rates, parse_warmup

START = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)


def _relay(db_url: str, **channel: str) -> Any:
    from relay.api import Relay
    from relay.config import load_config
    from relay.testing import FakeClock

    overrides = {"database.url": db_url, **{f"channels.console.{k}": v for k, v in channel.items()}}
    return Relay.open(load_config(overrides=overrides), clock=FakeClock(START))


@pytest.fixture
def throttled(db_url: str) -> Iterator[Any]:
    with _relay(db_url, domain_rates="gmail.com googlemail.com = 2/hour; * = 3/hour") as relay:
        yield relay


def _sent(relay: Any) -> dict[str, datetime | None]:
    return {
        v.contact: next(
            (m.sent_at for m in relay.transcript(v.id) if m.direction == "outbound"), None
        )
        for v in relay.instances()
    }


def test_one_providers_domains_share_a_throttle(throttled: Any) -> None:
    relay, clock = throttled, throttled.clock
    for address in ("a@gmail.com", "b@googlemail.com", "c@gmail.com", "d@example.com"):
        relay.start(address, "Confirm", ["Day?"], heartbeat="2h")
    sent = _sent(relay)
    assert sent["a@gmail.com"] == sent["b@googlemail.com"] == sent["d@example.com"] == START
    assert sent["c@gmail.com"] is None  # the third to Google's domains within the hour
    clock.advance(timedelta(minutes=59))
    relay.run_due(poll=False)
    assert _sent(relay)["c@gmail.com"] is None
    clock.advance(timedelta(minutes=1))
    relay.run_due(poll=False)
    assert _sent(relay)["c@gmail.com"] == START + timedelta(hours=1)
    # Its follow-up counts two hours from when it went out, not from when it was written.
    (held,) = [v for v in relay.instances() if v.contact == "c@gmail.com"]
    assert relay.get(held.id).next_heartbeat_at == START + timedelta(hours=3)


def test_a_new_mailbox_warms_up(db_url: str) -> None:
    with _relay(db_url, warmup="2/day +50%", warmup_from="2026-03-10") as relay:
        for n in range(5):
            relay.start(f"p{n}@example.com", "Confirm", ["Day?"], heartbeat="30d")
        assert sum(1 for at in _sent(relay).values() if at) == 2  # day one: 2
        relay.clock.advance(timedelta(days=1))
        relay.run_due(poll=False)
        assert sum(1 for at in _sent(relay).values() if at) == 5  # day two: 3 more


def test_bad_settings_are_named() -> None:
    with pytest.raises(ConfigError, match=r"channels\.mail\.domain_rates"):
        parse_domain_rates("mail", "gmail.com 20/hour")
    with pytest.raises(ConfigError, match="invalid rate"):
        parse_domain_rates("mail", "gmail.com = lots")
    with pytest.raises(ConfigError, match="warmup needs warmup_from"):
        parse_warmup("mail", "50/day +25%", None)
    with pytest.raises(ConfigError, match="use forms like"):
        parse_warmup("mail", "fast", "2026-01-01")
    groups = parse_domain_rates("mail", "gmail.com, googlemail.com = 20/hour")
    assert group_for(groups, "x@GoogleMail.com") == ("gmail.com", "googlemail.com")
    assert group_for(groups, "x@example.com") is None
    assert parse_warmup("m", "50/day +25%", "2026-01-01").cap(START) == 50 * 1.25**68 // 1
