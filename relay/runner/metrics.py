"""``/metrics`` of ``relay serve``: Prometheus text format, read from the store at
scrape time by a custom collector (prometheus_client), so every server on one
store reports the same values whichever daemon did the work, and a restart of
the server resets nothing.

Names (each documented in docs/operations.md):

- ``relay_conversations{state}``, ``relay_outbox_messages{status}`` (gauges)
- ``relay_messages_sent_total``, ``_delivered_total``, ``_failed_total``,
  ``_bounced_total`` ``{channel}`` and ``relay_replies_total{channel}``,
  ``relay_followups_total`` (counters)
- ``relay_heartbeat_lateness_seconds``: how long the oldest due heartbeat has waited
- ``relay_agent_turn_seconds{quantile}``: from a turn becoming due to it committed,
  over the latest state changes (a summary)
- ``relay_daemons_alive``, ``relay_daemon_last_pulse_timestamp_seconds{daemon,host}``
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.samples import Sample
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from relay.core.states import State
from relay.core.values import MessageStatus

if TYPE_CHECKING:
    from relay.engine.runtime import Runtime

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
QUANTILES = (0.5, 0.9, 0.99)
#: A daemon that has not pulsed for this long is not alive (``relay status``'s rule).
MESSAGE_KINDS = {
    "sent": "Outbound messages a channel took",
    "delivered": "Outbound messages the provider reported delivered or read",
    "failed": "Outbound messages that failed for good or were reported undelivered",
    "bounced": "Outbound messages the provider reported bounced",
}


class StoreCollector:
    """Reads the store once per scrape (a few indexed statements and one grouped
    scan of the outbound messages) and yields the metric families."""

    def __init__(self, relay: Runtime) -> None:
        self.relay = relay

    def describe(self) -> list[Metric]:
        return []  # no scrape at registration: the store is read only when asked

    def collect(self) -> Iterator[Metric]:
        from relay.engine.verbs.lookups import DAEMON_SILENCE
        from relay.store import daemons, metric_reads, status_counts

        now = self.relay.now()
        with self.relay.store.read_transaction() as session:
            states = status_counts.instances_by_state(session)
            outbox = status_counts.outbound_by_status(session, [s.value for s in OUTBOX])
            counts = metric_reads.message_counts(session)
            replies = metric_reads.replies_by_channel(session)
            followups = metric_reads.followups_sent(session)
            oldest = metric_reads.oldest_due_heartbeat(session, now)
            turns = metric_reads.recent_turn_seconds(session)
            alive = daemons.live_daemons(session, now - DAEMON_SILENCE)
        yield _labelled(GaugeMetricFamily, "relay_conversations", "Conversations by state",
                        "state", {s.value: states.get(s.value, 0) for s in State})  # fmt: skip
        yield _labelled(GaugeMetricFamily, "relay_outbox_messages", "Outbound messages by status",
                        "status", {s.value: outbox.get(s.value, 0) for s in OUTBOX})  # fmt: skip
        for kind, text in MESSAGE_KINDS.items():
            yield _labelled(CounterMetricFamily, f"relay_messages_{kind}", text, "channel",
                            counts[kind])  # fmt: skip
        reached = "Contacts' messages that reached a conversation"
        yield _labelled(CounterMetricFamily, "relay_replies", reached, "channel", replies)
        yield CounterMetricFamily("relay_followups", "Follow-ups sent", value=followups)
        lateness = max(0.0, (now - oldest).total_seconds()) if oldest else 0.0
        yield GaugeMetricFamily(
            "relay_heartbeat_lateness_seconds",
            "How long the oldest due heartbeat has waited to fire",
            value=lateness,
        )
        yield _turns(turns)
        yield GaugeMetricFamily("relay_daemons_alive", "Daemons that pulsed lately",
                                value=len(alive))  # fmt: skip
        pulses = GaugeMetricFamily(
            "relay_daemon_last_pulse_timestamp_seconds",
            "When each live daemon last pulsed (Unix time)",
            labels=["daemon", "host"],
        )
        for daemon in alive:
            pulses.add_metric([daemon.id, daemon.host], daemon.last_pulse_at.timestamp())
        yield pulses


#: The outbox statuses reported (inbound's received/processed are not the outbox's).
OUTBOX = (
    MessageStatus.QUEUED,
    MessageStatus.SENDING,
    MessageStatus.SENT,
    MessageStatus.UNKNOWN,
    MessageStatus.FAILED,
    MessageStatus.BLOCKED,
    MessageStatus.CANCELLED,
)


def _labelled(
    family: type[GaugeMetricFamily] | type[CounterMetricFamily],
    name: str,
    text: str,
    label: str,
    values: dict[str, int],
) -> Metric:
    metric = family(name, text, labels=[label])
    for key, value in sorted(values.items()):
        metric.add_metric([key], value)
    return metric


def _turns(seconds: list[float]) -> Metric:
    summary = SummaryMetricFamily(
        "relay_agent_turn_seconds",
        "Seconds from a turn becoming due to the agent's turn committed (latest turns)",
        count_value=len(seconds),
        sum_value=sum(seconds),
    )
    ordered = sorted(seconds)
    for q in QUANTILES:
        value = ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")
        summary.samples.append(Sample("relay_agent_turn_seconds", {"quantile": str(q)}, value))
    return summary


def exposition(relay: Runtime) -> bytes:
    """The text a scrape gets."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoreCollector(relay))
    return generate_latest(registry)


async def handle(relay: Runtime, request: Request) -> Response:
    """``GET /metrics``; with ``[metrics] token_env`` set, only for
    ``Authorization: Bearer <token>``. (:func:`relay.runner.serve.build_app` loads
    this module at the first scrape: a server nobody scrapes runs none of it.)"""
    token_env = relay.config.settings.metrics.token_env
    if token_env:
        token = os.environ.get(token_env)
        if not token:
            return PlainTextResponse(f"{token_env} is not set\n", status_code=503)
        given = request.headers.get("authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            return PlainTextResponse(
                "missing or wrong bearer token\n",
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
    body = await run_in_threadpool(exposition, relay)
    return Response(body, media_type=CONTENT_TYPE)
