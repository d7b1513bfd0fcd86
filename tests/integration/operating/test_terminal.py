"""The terminal as people expect it: tables sized to content, state colours,
reasons on show and list, refusals that name commands, flags without a
placeholder, shell completion, relay.toml found from a subfolder, contact
list, the inbox, retry, and the daemon's minute summary."""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_checks import ok, valid
from rich.console import Console

from relay.core.states import Event
from relay.core.values import MessageStatus

Cli = Callable[..., Any]


def start(cli: Cli, contact: str = "+15551230001", *extra: str) -> dict[str, Any]:
    args = ("start", contact, "-o", "Confirm the delivery date", "-t", "Ask", "--defer")
    return ok(cli(*args, *extra, "--json")).json()


# -- rendering ---------------------------------------------------------------------


def _draw(monkeypatch: pytest.MonkeyPatch, width: int, columns: Any, rows: Any) -> str:
    from relay.cli import render

    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=True, no_color=False)
    monkeypatch.setattr(render, "_console", console)
    monkeypatch.setattr(render, "is_terminal", lambda: True)
    render.table("t", columns, rows)
    return out.getvalue()


def test_ids_and_states_never_wrap_and_long_text_ends_with_an_ellipsis(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from relay.cli import render

    columns = [render.Col("id"), render.Col("state"), render.Col("objective", "text")]
    rows = [["abc1234", render.state_text("NEEDS_HUMAN_INTERVENTION"), "word " * 60]]
    drawn = _draw(monkeypatch, 80, columns, rows)
    assert "NEEDS_HUMAN_INTERVENTION" in drawn  # whole, on one line
    assert "abc1234" in drawn
    assert "…" in drawn
    assert len([line for line in drawn.splitlines() if "abc1234" in line]) == 1
    assert "\x1b[1;35m" in drawn  # the "needs you" colour


def test_optional_columns_go_first_on_a_narrow_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    from relay.cli import render

    columns = [
        render.Col("id"),
        render.Col("state"),
        render.Col("created", optional=True),
        render.Col("objective", "text"),
    ]
    rows = [["abc1234", render.state_text("WAITING_FOR_REPLY"), "2026-01-01 10:00:00Z", "x" * 50]]
    drawn = _draw(monkeypatch, 50, columns, rows)
    assert "WAITING_FOR_REPLY" in drawn and "abc1234" in drawn
    assert "created" not in drawn


def test_each_state_family_has_its_colour_and_no_color_turns_it_off() -> None:
    from relay.cli import render

    families = {render.family(s) for s in (
        "ACTIVE", "WAITING_FOR_REPLY", "NEEDS_HUMAN_INTERVENTION", "COMPLETED", "FAILED"
    )}  # fmt: skip
    assert families == {"live", "waiting", "needs you", "done", "failed"}
    styles = {render.FAMILIES[f][0] for f in families}
    assert len(styles) == 5
    plain = io.StringIO()
    Console(file=plain, force_terminal=True, no_color=True).print(render.state_text("FAILED"))
    assert "\x1b[31" not in plain.getvalue() and "FAILED" in plain.getvalue()


def test_list_and_show_give_the_reason(cli: Cli, api: Any, drive: Any) -> None:
    first = start(cli)
    ok(cli("pause", first["id"], "--reason", "on holiday"))
    second = start(cli, "+15551230002")
    with api.store.transaction() as session:
        from relay.engine.conversation import transitions
        from relay.store import instances

        instance = instances.resolve(session, second["id"], lock=True)
        transitions.apply_event(
            session, instance, Event.REQUEST_INTERVENTION, now=api.now(), actor="agent",
            reason="the contact asked for a person",
        )  # fmt: skip
    listed = {v["id"]: v["reason"] for v in ok(cli("list", "--json")).json()}
    assert listed == {first["id"]: "on holiday", second["id"]: "the contact asked for a person"}
    shown = ok(cli("show", second["id"])).stdout
    assert "reason" in shown and "the contact asked for a person" in shown
    assert "on holiday" in ok(cli("list")).stdout
    ok(cli("cancel", first["id"], "--reason", "wrong person"))
    assert ok(cli("show", first["id"], "--json")).json()["reason"] == "cancelled: wrong person"


def test_refusals_name_the_commands_that_would_work(cli: Cli) -> None:
    data = start(cli)
    ok(cli("pause", data["id"]))
    result = cli("pause", data["id"])
    assert result.exit_code == 1
    assert "`relay pause` does not apply" in result.stderr
    assert f"`relay resume {data['id']}`" in result.stderr
    assert f"`relay cancel {data['id']}`" in result.stderr
    assert "prior_instance_terminal" not in result.stderr
    ok(cli("cancel", data["id"]))
    result = cli("resume", data["id"])
    assert result.exit_code == 1 and "has ended" in result.stderr


def test_flags_show_no_bool_placeholder_and_completion_is_offered(run_cli: Cli) -> None:
    help_text = ok(run_cli("--help", env={"COLUMNS": "120"})).stdout
    assert "--install-completion" in help_text
    assert "<bool>" not in help_text
    assert "<bool>" not in ok(run_cli("list", "--help")).stdout
    shown = ok(run_cli("--show-completion", env={"SHELL": "/bin/bash"})).stdout
    assert "relay" in shown.lower() or "complete" in shown.lower()


# -- relay.toml from a subfolder ---------------------------------------------------------


def test_a_subfolder_uses_the_projects_relay_toml(run_cli: Cli, tmp_path: Path) -> None:
    ok(run_cli("init"))
    ok(run_cli("start", "+15551230001", "-o", "o", "-t", "t", "--defer"))
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    os.chdir(sub)
    assert len(ok(run_cli("list", "--json")).json()) == 1
    assert not (sub / ".relay").exists()
    shown = ok(run_cli("config", "show", "--json")).json()
    assert str(tmp_path / "relay.toml") in str(shown)


def test_a_subfolder_finds_a_default_database_made_without_relay_toml(
    run_cli: Cli, tmp_path: Path
) -> None:
    ok(run_cli("start", "+15551230001", "-o", "o", "-t", "t", "--defer"))
    assert (tmp_path / ".relay" / "relay.db").is_file()
    sub = tmp_path / "sub"
    sub.mkdir()
    os.chdir(sub)
    assert len(ok(run_cli("list", "--json")).json()) == 1
    assert not (sub / ".relay").exists()


# -- contact list, inbox, retry ------------------------------------------------------


def test_contact_list_shows_fields_and_counts(cli: Cli) -> None:
    first = start(cli)
    start(cli)
    start(cli, "ana@example.com")
    rows = valid("contact-list", ok(cli("contact", "list", "--json")).json())
    assert [r["contact"] for r in rows] == ["ana@example.com", "+15551230001"]
    phone = rows[1]
    assert phone["live_instance"] == first["id"]
    assert (phone["queued"], phone["conversations"]) == (1, 2)
    assert "ana@example.com" in ok(cli("contact", "list")).stdout


def test_inbox_shows_unrouted_late_and_rejected_inbound(cli: Cli, api: Any) -> None:
    from relay.store.models import InboundReject

    ok(cli("receive", "+15559990000", "who is this?"))
    data = start(cli)
    ok(cli("cancel", data["id"]))
    ok(cli("receive", "+15551230001", "sorry, late"))
    with api.store.transaction() as session:
        session.add(InboundReject(
            channel="sms", sender="SHORTCODE", body="promo", error="not a phone number",
            created_at=api.now(),
        ))  # fmt: skip
    items = valid("inbox", ok(cli("inbox", "--json")).json())
    kinds = {i["kind"]: i for i in items}
    assert set(kinds) == {"unrouted", "late", "rejected"}
    assert kinds["unrouted"]["text"] == "who is this?"
    assert kinds["late"]["instance_id"] == data["id"]
    assert kinds["rejected"]["sender"] == "SHORTCODE"
    only = ok(cli("inbox", "--kind", "late", "--json")).json()
    assert [i["kind"] for i in only] == ["late"]
    assert "who is this?" in ok(cli("inbox")).stdout
    assert cli("inbox", "--kind", "nope").exit_code == 2


def _fail_message(api: Any, message_id: int) -> None:
    from relay.store.models import Message

    with api.store.transaction() as session:
        message = session.get(Message, message_id)
        message.status = MessageStatus.FAILED.value
        message.attempts = 5
        message.last_error = "provider down"
        message.next_attempt_at = None


def test_retry_requeues_a_failed_delivery_of_a_live_conversation(cli: Cli, api: Any) -> None:
    data = start(cli)
    sent = ok(cli("send", data["id"], "Hello", "--json")).json()
    _fail_message(api, sent["id"])
    retried = valid("message", ok(cli("retry", str(sent["id"]), "--json")).json())
    assert retried["status"] in ("sent", "queued")
    assert retried["attempts"] <= 1
    again = cli("retry", str(sent["id"]))
    assert again.exit_code == 1 and "only a failed delivery" in again.stderr


def test_retry_is_refused_when_the_conversation_ended(cli: Cli, api: Any) -> None:
    data = start(cli)
    sent = ok(cli("send", data["id"], "Hello", "--json")).json()
    _fail_message(api, sent["id"])
    ok(cli("cancel", data["id"]))
    result = cli("retry", str(sent["id"]))
    assert result.exit_code == 1 and "FAILED" in result.stderr
    assert cli("retry", "999999").exit_code == 2


# -- the daemon's minute summary -------------------------------------------------------------


def test_the_minute_summary_says_what_the_daemon_did_and_nothing_when_idle() -> None:
    from relay.engine.outbox.dispatcher import DeliveryReport
    from relay.runner.pulse import PulseReport
    from relay.runner.summary import MinuteSummary

    summary = MinuteSummary()
    assert summary.take() is None
    summary.add(PulseReport(fired=2, delivery=DeliveryReport(sent=3, failed=1)))
    summary.add(PulseReport(delivery=DeliveryReport(sent=1)))
    summary.add(inbound=4)
    line = summary.take()
    assert line == "last minute: 4 sent, 1 failed, 2 heartbeat(s), 4 inbound"
    assert summary.take() is None
