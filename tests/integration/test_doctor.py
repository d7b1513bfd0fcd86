"""relay doctor finds broken invariants, and finds none in a store the engine kept."""

from __future__ import annotations

from typing import Any

from sqlalchemy import update

from relay.engine.verbs.doctor import examine
from relay.store.models import Instance


def test_a_store_kept_by_the_engine_is_clean(relay_api: Any, drive: Any) -> None:
    first = relay_api.start("+15551230001", "one", ["a"])
    relay_api.start("+15551230001", "two", ["b"])
    relay_api.pause(first.id)
    relay_api.resume(first.id)
    drive(relay_api, first.id, "agent_sends_first_message", "message_sent")
    assert examine(relay_api) == []


def test_doctor_reports_each_broken_rule(relay_api: Any, cli: Any) -> None:
    first = relay_api.start("+15551230001", "one", ["a"])
    second = relay_api.start("+15551230001", "two", ["b"])
    with relay_api.store.transaction() as session:
        # A hand edit: the holder ended without promoting the queued one, and
        # no transition-log row was written.
        session.execute(
            update(Instance)
            .where(Instance.id == first.id)
            .values(state="COMPLETED", contact_slot=None)
        )
        session.execute(
            update(Instance).where(Instance.id == second.id).values(previous_state="CREATED")
        )
    problems = {(f.subject, f.problem) for f in examine(relay_api)}
    assert (first.id, "state COMPLETED has no matching transition-log row") in problems
    assert (second.id, "QUEUED although no instance holds the contact's slot") in problems
    assert (second.id, "PAUSED must go with a recorded prior state") in problems
    result = cli("doctor", "--json")
    assert result.exit_code == 1
    assert result.json()["ok"] is False
