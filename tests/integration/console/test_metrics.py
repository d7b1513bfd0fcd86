"""``/metrics``: Prometheus text that prometheus_client's own parser reads, values
from the store, its own token; and every counter moving end to end."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from console_support import METRICS_TOKEN, Served
from sqlalchemy import select

from relay.channels.base import Incoming, Receipt
from relay.core.values import DeliveryStatus


def parsed(text: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """sample name -> labels -> value, through prometheus_client's text parser."""
    from prometheus_client.parser import text_string_to_metric_families

    samples: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def total(samples: dict[str, dict[Any, float]], name: str) -> float:
    return sum(samples.get(name, {}).values())


def test_metrics_need_their_token_and_parse(served: Served) -> None:
    with served.client() as client:
        assert client.get("/metrics").status_code == 401
        wrong = client.get("/metrics", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        # The console's session is not the metrics token.
        answer = client.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = parsed(answer.text)
    status = served.relay.status()
    for state, count in status.states.items():
        assert samples["relay_conversations"][(("state", state),)] == count
    assert samples["relay_messages_sent_total"][(("channel", "console"),)] == 11
    assert samples["relay_replies_total"][(("channel", "console"),)] == 5
    assert samples["relay_daemons_alive"][()] == 0
    assert (("quantile", "0.5"),) in samples["relay_agent_turn_seconds"]


@pytest.fixture
def app_and_relay(make_relay: Callable[..., Any], db_url: str, clock: Any) -> tuple[Any, Any]:
    from starlette.testclient import TestClient

    from relay.api import Relay
    from relay.runner.serve import build_app

    made = make_relay(db_url, clock)
    relay = Relay(made.store, made.config, clock)
    return TestClient(build_app(relay)), relay


def provider_ids(relay: Any) -> list[str]:
    from relay.store.tables import messages

    with relay.store.read_transaction() as session:
        rows = session.scalars(
            select(messages.c.provider_message_id)
            .where(messages.c.direction == "outbound", messages.c.status == "sent")
            .order_by(messages.c.id)
        )
        return [str(r) for r in rows]


def test_every_counter_moves_end_to_end(app_and_relay: tuple[Any, Any], clock: Any) -> None:
    from relay.runner.daemon import DaemonRunner

    client, relay = app_and_relay

    def scrape() -> dict[str, dict[Any, float]]:
        answer = client.get("/metrics")
        assert answer.status_code == 200
        return parsed(answer.text)

    before = scrape()
    for n in range(4):
        relay.start(f"+1555123100{n}", "a delivery", ["Which day?"], heartbeat="10m")
    after_start = scrape()
    assert (
        total(after_start, "relay_messages_sent_total")
        == total(before, "relay_messages_sent_total") + 4
    )
    assert total(after_start, "relay_agent_turn_seconds_count") == 4

    # The fourth conversation waits for its reply (the heartbeat below).
    delivered, bounced, failed, _ = provider_ids(relay)
    relay.ingest("console", Incoming(receipts=[
        Receipt(delivered, DeliveryStatus.DELIVERED),
        Receipt(bounced, DeliveryStatus.BOUNCED, error="550 no such user", permanent=True),
        Receipt(failed, DeliveryStatus.UNDELIVERED, error="30003"),
    ]))  # fmt: skip
    receipts = scrape()
    for name in ("delivered", "bounced", "failed"):
        assert total(receipts, f"relay_messages_{name}_total") == 1, name
    # A counter never goes back: a message that failed after it was sent stays sent.
    assert total(receipts, "relay_messages_sent_total") == 4

    relay.receive("+15551231000", "Thursday", channel="console")
    relay.run_due(poll=False)
    replied = scrape()
    assert total(replied, "relay_replies_total") == 1
    assert total(replied, "relay_agent_turn_seconds_count") == 5

    assert replied["relay_heartbeat_lateness_seconds"][()] == 0
    clock.advance(timedelta(minutes=12))
    late = scrape()
    assert late["relay_heartbeat_lateness_seconds"][()] == pytest.approx(120, abs=1)
    assert late["relay_followups_total"][()] == 0
    relay.run_due(poll=False)
    followed = scrape()
    assert followed["relay_followups_total"][()] >= 1
    assert followed["relay_heartbeat_lateness_seconds"][()] == 0
    assert followed["relay_outbox_messages"][(("status", "sent"),)] > 0

    assert followed["relay_daemons_alive"][()] == 0
    runner = DaemonRunner(relay)
    runner.register()
    alive = scrape()
    assert alive["relay_daemons_alive"][()] == 1
    pulses = alive["relay_daemon_last_pulse_timestamp_seconds"]
    assert list(pulses.values()) == [clock.now().timestamp()]
