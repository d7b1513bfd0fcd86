"""A pulse that fails mid-turn (the database went away as the turn committed) leaves
the turn leased to its own daemon; the next pulse takes it back at once instead of
waiting out the 5-minute lease (found while writing the PostgreSQL outage test)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from daemon_support import OBJECTIVE, PHONE, TODOS, row
from engine_relay import EngineRelay as Relay
from sqlalchemy.exc import OperationalError

from relay.engine.turns.commit import TurnCommitter
from relay.runner.daemon import DaemonRunner


def test_the_pulse_after_a_failed_one_runs_the_turn_it_left_leased(
    make_relay_here: Callable[..., Relay], monkeypatch: pytest.MonkeyPatch
) -> None:
    relay = make_relay_here()
    iid = relay.start(PHONE, OBJECTIVE, list(TODOS)).id
    runner = DaemonRunner(relay)
    real_commit = TurnCommitter.commit_many

    def outage(self: TurnCommitter, items: list[Any]) -> Any:
        raise OperationalError("COMMIT", {}, Exception("server closed the connection"))

    monkeypatch.setattr(TurnCommitter, "commit_many", outage)
    runner.pulse_job()  # the agent answered; the commit failed
    assert row(relay, iid).state == "CREATED"
    assert row(relay, iid).lease_owner == runner.ident

    monkeypatch.setattr(TurnCommitter, "commit_many", real_commit)
    runner.pulse_job()  # the database is back

    assert row(relay, iid).state == "WAITING_FOR_REPLY"
    assert row(relay, iid).lease_owner is None
