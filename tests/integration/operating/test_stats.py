"""``relay stats``: the funnel computed by SQL aggregates, through the real CLI."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cli_checks import ok, valid

from relay.core.states import Event
from relay.core.values import Direction, MessageStatus

Cli = Callable[..., Any]


def _start(cli: Cli, contact: str, campaign: str, *extra: str) -> str:
    args = ("start", contact, "-o", "Confirm the date", "-t", "Which day suits you?")
    return ok(cli(*args, "--campaign", campaign, *extra, "--json")).json()["id"]


def _fail_outbound(api: Any, instance_id: str, error: str) -> None:
    """As a bounce receipt does: the sent messages fail, and the conversation's
    first delivery is taken back (``funnel.forget_delivery``)."""
    from sqlalchemy import update

    from relay.store import claims, funnel
    from relay.store.models import Message

    with api.store.transaction() as session:
        session.execute(
            update(Message)
            .where(Message.instance_id == instance_id)
            .where(Message.direction == Direction.OUTBOUND.value)
            .values(status=MessageStatus.FAILED.value, last_error=error, sent_at=None)
        )
        instance = claims.lock_instance(session, instance_id)
        assert instance is not None
        funnel.forget_delivery(session, instance)


def test_stats_draws_the_funnel_of_a_campaign(cli: Cli, api: Any, drive: Any) -> None:
    replied = _start(cli, "+15551230001", "spring")
    ok(cli("receive", "+15551230001", "Thursday works"))
    ok(cli("tick"))
    failed = _start(cli, "+15551230002", "spring")
    _fail_outbound(api, failed, "number not in service")
    ok(cli("cancel", failed))
    _start(cli, "+15551230003", "spring")
    ok(cli("contact", "opt-out", "+15551230003"))
    human = _start(cli, "+15551230004", "spring", "--defer")
    drive(api, human, Event.REQUEST_INTERVENTION)
    _start(cli, "+15551230005", "autumn")

    data = valid("stats", ok(cli("stats", "--campaign", "spring", "--json")).json())
    assert (data["started"], data["delivered"], data["replied"]) == (4, 2, 1)
    outcomes = data["outcomes"]
    assert outcomes["failed"] == 1 and outcomes["opted_out"] == 1
    assert outcomes["needs_human"] == 1
    assert outcomes["completed"] + outcomes["live"] + outcomes["ended_early"] == 1
    assert sum(outcomes.values()) == 4
    assert data["reply_rate"] == 0.5
    assert data["median_first_reply_seconds"] is not None
    assert data["median_first_reply_seconds"] >= 0
    assert data["failed_deliveries"] == [{"reason": "number not in service", "count": 1}]
    assert api.get(replied).campaign == "spring"

    everything = valid("stats", ok(cli("stats", "--json")).json())
    assert everything["started"] == 5
    assert ok(cli("stats", "--since", "1d", "--json")).json()["started"] == 5
    text = ok(cli("stats", "--campaign", "spring")).stdout
    assert "first message delivered" in text and "reply rate" in text and "50.0%" in text
    assert "number not in service" in text
    assert [v["id"] for v in ok(cli("list", "--campaign", "autumn", "--json")).json()] != []
    assert len(ok(cli("list", "--campaign", "spring", "--json")).json()) == 4


def test_stats_of_nothing(cli: Cli) -> None:
    data = valid("stats", ok(cli("stats", "--campaign", "none", "--json")).json())
    assert data["started"] == 0 and data["reply_rate"] is None
    assert data["median_first_reply_seconds"] is None
    assert "started" in ok(cli("stats")).stdout
    assert cli("stats", "--since", "soon").exit_code == 2
