"""``relay tick`` (one pass of due work, for cron) and ``relay demo``."""

from __future__ import annotations

import os
import socket

import typer

from relay.cli import render
from relay.cli.main import JsonOption, state


def tick(
    no_poll: bool = typer.Option(False, "--no-poll", help="Do not poll channels for inbound."),
    json_out: JsonOption = False,
) -> None:
    """Do one pass of all due work: snoozes, heartbeats, turns, deliveries, channel polls.

    With it the whole flow works without a daemon, e.g. from cron:
    `* * * * * cd /srv/outreach && relay tick`.
    """
    from relay.engine.pulse import Pulse

    relay = state.relay()
    report = Pulse(relay, owner=f"tick:{socket.gethostname()}:{os.getpid()}").run(poll=not no_poll)
    if json_out:
        render.emit_json(report.to_json())
        return
    if report.idle:
        render.line("nothing due")
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
    from relay.engine.demo import run_demo

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
    if result.instance.state != "COMPLETED":
        raise typer.Exit(1)


def doctor(json_out: JsonOption = False) -> None:
    """Check the store against relay's invariants; exit 1 if any is broken.

    Slot holders per contact, QUEUED only behind a holder, PAUSED with a prior
    state, a transition-log row for the current state, heartbeats only in
    WAITING_FOR_REPLY, nothing queued for opted-out contacts.
    """
    from relay.engine.doctor import examine

    findings = examine(state.relay())
    if json_out:
        render.emit_json({"ok": not findings, "findings": [f.to_json() for f in findings]})
    elif not findings:
        render.line("ok: no invariant is broken")
    else:
        render.table("findings", ["subject", "problem"], ([f.subject, f.problem] for f in findings))
    if findings:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command()(tick)
    app.command()(demo)
    app.command()(doctor)
