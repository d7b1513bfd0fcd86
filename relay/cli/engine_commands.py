"""``relay tick`` (one pass of due work, for cron) and ``relay demo``."""

from __future__ import annotations

import os
import socket
from typing import Annotated, Any

import typer

from relay.cli import render
from relay.cli.session import JsonOption, state
from relay.core.states import SUCCEEDED, values


def tick(
    no_poll: bool = typer.Option(False, "--no-poll", help="Do not poll channels for inbound."),
    json_out: JsonOption = False,
) -> None:
    """Do one pass of all due work: snoozes, heartbeats, turns, deliveries, channel polls.

    With it the whole flow works without a daemon, e.g. from cron:
    `* * * * * cd /srv/outreach && relay tick`.
    """
    owner = f"tick:{socket.gethostname()}:{os.getpid()}"
    report = state.relay().run_due(poll=not no_poll, owner=owner)
    if json_out:
        render.emit_json(report.to_json())
        return
    if report.idle:
        render.line("Nothing due.")
        for error in report.errors:
            render.warn(error)
        return
    for turn in report.turns:
        what = f"{turn.instance_id} {turn.reason} → {turn.state}"
        if turn.discarded or turn.note:
            what += f" ({turn.note})"
        render.line(what)
        for text in turn.messages:
            render.line(f"  sent: {text}")
    d = report.delivery
    render.fields(
        [
            ("snoozes ended", report.resumed),
            ("heartbeats fired", report.fired),
            ("abandoned", report.abandoned),
            ("held for window", report.deferred),
            ("inbound polled", report.polled),
            ("inbound pushed", report.pushed),
            ("turns", len(report.turns)),
            ("delivered", d.sent),
            ("retrying", d.retried),
            ("failed", d.failed),
            ("blocked (opted out)", d.blocked),
            ("held (rate limit)", d.held),
        ]
    )
    for error in report.errors:
        render.warn(error)


def demo(json_out: JsonOption = False) -> None:
    """Run a whole conversation on a throw-away database with a simulated contact.

    Uses the scripted agent and the console channel; nothing is kept afterwards.
    """
    from relay.api import run_demo

    result = run_demo(on_event=(lambda _: None) if json_out else render.line)
    if json_out:
        render.emit_json(
            {
                "instance": result.instance.to_json(),
                "transcript": [m.to_json() for m in result.transcript],
                "history": [h.to_json() for h in result.history],
                "result": result.result.to_json(),
            }
        )
    else:
        render.line("")
        render.table(
            "transcript",
            ["from", "status", "text"],
            ([m.author, m.status, m.text] for m in result.transcript),
        )
        render.table(
            "states",
            ["from", "to", "event", "actor"],
            ([h.from_state or "-", h.to_state, h.event, h.actor] for h in result.history),
        )
        render.table(
            "result (relay result ID --json gives it as data)",
            ["#", "kind", "answer", "from message"],
            (
                [t.todo.id, t.todo.answer_kind, render.answer(t.todo.answer), t.message.text]
                if t.message
                else [t.todo.id, t.todo.answer_kind, render.answer(t.todo.answer), "-"]
                for t in result.result.todos
            ),
        )
    if result.instance.state not in values(SUCCEEDED):
        raise typer.Exit(1)


EmailOption = Annotated[
    bool,
    typer.Option(
        "--email",
        help="Instead, check each email channel's sending domain in DNS: SPF, DKIM "
        "(dkim_selector), DMARC and its alignment, one-click unsubscribe; exit 1 if one fails.",
    ),
]


def doctor(
    json_out: JsonOption = False,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="Fix what can be fixed safely (a queue waiting behind nobody is promoted), "
            "each fix recorded in the transition log, then check again.",
        ),
    ] = False,
    email: EmailOption = False,
) -> None:
    """Check the store against relay's invariants; exit 1 if any is broken.

    Slot holders per contact, QUEUED only behind a holder, PAUSED with a prior
    state, a transition-log row for the current state, heartbeats only in
    WAITING_FOR_REPLY, nothing queued for opted-out contacts, and channels or
    the agent that could not work (a missing secret). Notices (no rule broken,
    but a person should look): inbound after its conversation ended or from no
    usable address, webhooks no daemon took in, and a message a crash left whose
    fate its channel cannot tell (`relay retry` sends it again).
    """
    relay = state.relay()
    if email:
        _doctor_email(relay, json_out)
        return
    repaired = relay.repair() if repair else []
    findings = relay.check()
    notices = relay.notices()
    if json_out:
        render.emit_json(
            {
                "ok": not findings,
                "findings": [f.to_json() for f in findings],
                "notices": [f.to_json() for f in notices],
                "repaired": [f.to_json() for f in repaired],
            }
        )
    else:
        for fix in repaired:
            render.line(f"repaired {fix.subject}: {fix.problem}")
        for notice in notices:
            render.warn(f"{notice.subject}: {notice.problem}")
        if not findings:
            render.line("ok: no invariant is broken")
        else:
            rows = ([f.subject, f.problem] for f in findings)
            render.table("findings", ["subject", "problem"], rows)
    if findings:
        raise typer.Exit(1)


def _doctor_email(relay: Any, json_out: bool) -> None:
    """``relay doctor --email``: what mail providers check (see docs/compliance.md)."""
    from relay.api import check_email

    checks = check_email(relay)
    failed = [c for c in checks if not c.ok]
    if json_out:
        render.emit_json({"ok": not failed, "checks": [c.to_json() for c in checks]})
    else:
        rows = ([c.channel, c.check, "ok" if c.ok else "FAIL", c.detail] for c in checks)
        render.table("email", ["channel", "check", "result", "detail"], rows)
    if failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command()(tick)
    app.command()(demo)
    app.command()(doctor)
