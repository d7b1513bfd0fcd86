"""The daemon's maintenance job: retention (relay/runner/retention.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from daemon_support import OTHER, PHONE, history, outbound, pulse, start_waiting
from engine_relay import EngineRelay as Relay

from relay.runner import retention

DAY = timedelta(days=1)


def test_old_delivery_bookkeeping_is_cleared_and_the_text_kept(
    make_relay_here: Callable[..., Relay], clock: Any
) -> None:
    relay = make_relay_here(**{"retention.outbox_days": 30})
    old = start_waiting(relay, heartbeat="90d")
    clock.advance(25 * DAY)
    recent = start_waiting(relay, OTHER, heartbeat="90d")
    clock.advance(6 * DAY)  # the first message is 31 days old, the second 6

    assert retention.prune(relay) == {
        "outbox_pruned": 1,
        "transcript_messages_deleted": 0,
        "daemons_pruned": 0,
    }
    [first] = outbound(relay, old)
    assert first.idempotency_key is None and first.status == "sent" and first.body
    assert outbound(relay, recent)[0].idempotency_key is not None
    assert retention.prune(relay)["outbox_pruned"] == 0  # nothing twice


def test_transcripts_of_long_ended_conversations_are_deleted_when_configured(
    make_relay_here: Callable[..., Relay], clock: Any
) -> None:
    relay = make_relay_here(**{"retention.transcript_days": 7})
    ended = start_waiting(relay)
    relay.cancel(ended)
    live = start_waiting(relay, OTHER)
    clock.advance(8 * DAY)
    relay.receive(PHONE, "hello?")  # a late reply on the ended one: kept

    result = retention.prune(relay)
    assert result["transcript_messages_deleted"] == 1
    assert outbound(relay, ended) == []
    assert history(relay, ended)  # the transition log stays
    assert relay.get(ended).state == "FAILED"
    assert len(outbound(relay, live)) == 1  # not ended: kept however old


def test_retention_off_keeps_everything(make_relay_here: Callable[..., Relay], clock: Any) -> None:
    relay = make_relay_here(**{"retention.outbox_days": 0, "retention.transcript_days": 0})
    iid = start_waiting(relay)
    relay.cancel(iid)
    clock.advance(400 * DAY)
    assert retention.prune(relay) == {
        "outbox_pruned": 0,
        "transcript_messages_deleted": 0,
        "daemons_pruned": 0,
    }
    assert outbound(relay, iid)[0].idempotency_key is not None


def test_the_maintenance_job_runs_retention(
    make_relay_here: Callable[..., Relay], clock: Any, caplog: Any
) -> None:
    from relay.runner.daemon import DaemonRunner

    relay = make_relay_here(**{"retention.outbox_days": 1})
    start_waiting(relay)
    clock.advance(2 * DAY)
    pulse(relay)
    caplog.set_level("INFO", logger="relay.daemon")
    DaemonRunner(relay).maintenance_job()
    assert "maintenance: {'outbox_pruned': 1" in caplog.text


def test_rows_of_long_gone_daemons_are_pruned(
    make_relay_here: Callable[..., Relay], clock: Any
) -> None:
    from relay.runner.daemon import DaemonRunner
    from relay.store.models import Daemon

    relay = make_relay_here(**{"retention.outbox_days": 30})
    gone = DaemonRunner(relay)
    gone.register()
    clock.advance(31 * DAY)
    alive = DaemonRunner(relay)
    alive.register()
    assert retention.prune(relay)["daemons_pruned"] == 1
    with relay.store.transaction() as session:
        assert [d.id for d in session.query(Daemon)] == [alive.ident]
