"""Conversation lifecycle commands: start, list, show, transcript, history, pause,
resume, cancel, send, receive, status."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated

import typer

from relay.cli import render
from relay.cli.main import JsonOption, state
from relay.core.durations import format_duration, parse_duration
from relay.core.errors import InvalidInput

if TYPE_CHECKING:
    from relay.api import InstanceView, MessageView, StatusView


def _followups(view: InstanceView) -> str:
    return f"{view.follow_up_count}/{view.max_followups}"


def _todo_line(todo_status: str, text: str, todo_id: int) -> str:
    marks = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]", "skipped": "[-]"}
    return f"{marks.get(todo_status, '[?]')} {todo_id}. {text}"


#: ``show`` lines left out when they have no value.
_OMITTED_WHEN_EMPTY = frozenset(
    {
        "previous state",
        "reason",
        "campaign",
        "heartbeat left",
        "paused until",
        "next message",
        "ended",
        "end reason",
        "failure reason",
    }
)


def print_instance(view: InstanceView) -> None:
    now = state.relay().now()
    left = view.heartbeat_remaining_seconds
    next_at = view.next_heartbeat_at
    pairs: list[tuple[str, object]] = [
        ("id", view.id),
        ("contact", view.contact),
        ("state", render.state_text(view.state)),
        ("previous state", view.previous_state),
        ("reason", view.reason),
        ("campaign", view.campaign),
        ("objective", view.objective),
        ("follow-ups", _followups(view)),
        ("heartbeat", format_duration_s(view.heartbeat_seconds)),
        (
            "next heartbeat",
            f"{render.when(next_at)} ({render.ago(next_at, now)})" if next_at else None,
        ),
        ("heartbeat left", format_duration_s(left) if left is not None else None),
        ("paused until", render.when(view.paused_until) if view.paused_until else None),
        ("next message", view.next_message),
        ("channel", view.channel),
        ("agent", view.agent),
        ("window", view.window),
        ("created", render.when(view.created_at)),
        ("updated", render.when(view.updated_at)),
        ("ended", render.when(view.ended_at) if view.ended_at else None),
        ("end reason", view.end_reason),
        ("failure reason", view.failure_reason),
        ("meta", ", ".join(f"{k}={v}" for k, v in view.meta.items()) if view.meta else None),
    ]
    render.fields((k, v) for k, v in pairs if v or k not in _OMITTED_WHEN_EMPTY)
    _print_todos(view)


def _print_todos(view: InstanceView) -> None:
    render.line("todos:")
    for todo in view.todos:
        line = "  " + _todo_line(todo.status, todo.text, todo.id)
        if todo.answer_kind != "text" or not todo.required:
            line += f"  ({todo.answer_kind}{'' if todo.required else ', optional'})"
        if todo.answered:
            line += f"  → {render.answer(todo.answer)}"
        render.line(line)
    if view.result_incomplete:
        missing = ", ".join(str(i) for i in view.missing_answers)
        render.warn(f"completed without the answers of required todo(s) {missing}")


def format_duration_s(seconds: int) -> str:
    return format_duration(timedelta(seconds=seconds))


def _state_line(view: InstanceView) -> None:
    extra = f" (was {view.previous_state})" if view.previous_state else ""
    render.line(f"{view.id} {view.state}{extra}")


def start(
    contact: Annotated[str, typer.Argument(help="Phone number (any format) or email address.")],
    objective: Annotated[
        str, typer.Option("--objective", "-o", help="What the conversation is for.")
    ],
    todo: Annotated[
        list[str],
        typer.Option(
            "--todo",
            "-t",
            help="A checklist item; repeat for several. End it with ::KIND for a structured "
            "answer: text, date, time, datetime, number, yesno, email, phone or "
            'choice(a,b,c); a trailing ? makes it optional ("Which day?::date", '
            '"Pick one::choice(mon,tue)", "Anything else?::text?").',
        ),
    ],
    heartbeat: Annotated[
        str | None,
        typer.Option(
            help="Silence before a follow-up: 90s, 30m, 2h, 1d. Default from config (30m)."
        ),
    ] = None,
    max_followups: Annotated[
        int | None,
        typer.Option("--max-followups", help="Follow-ups before abandoning. Default 5."),
    ] = None,
    channel: Annotated[str | None, typer.Option(help="Channel name (default: console).")] = None,
    agent: Annotated[str | None, typer.Option(help="Agent backend (default: scripted).")] = None,
    window: Annotated[
        str | None,
        typer.Option(help='Sending window for proactive messages, e.g. "mon-fri 09:00-18:00".'),
    ] = None,
    defer: Annotated[
        bool, typer.Option("--defer", help="Leave the first turn to the daemon or `relay tick`.")
    ] = False,
    subject: Annotated[
        str | None,
        typer.Option(help="Subject line (email). Default: the objective's first sentence."),
    ] = None,
    meta: Annotated[
        list[str] | None,
        typer.Option(
            "--meta",
            help="key=value of your own, kept on the conversation and returned in every "
            "event and in show/result; repeat for several.",
        ),
    ] = None,
    schema: Annotated[
        str | None,
        typer.Option(
            "--schema",
            help="A JSON Schema file for the whole result: an object whose properties are "
            'the todo ids ("1", "2", ...); each answer is checked against its property.',
        ),
    ] = None,
    campaign: Annotated[
        str | None, typer.Option(help="Tag it with a campaign (list, watch, stats filter by it).")
    ] = None,
    whatsapp_template: Annotated[
        str | None,
        typer.Option(
            "--whatsapp-template",
            help="An approved Content SID (HX...) sent when WhatsApp's 24-hour window is "
            "closed, instead of the channel's template_sid.",
        ),
    ] = None,
    template_var: Annotated[
        list[str] | None,
        typer.Option(
            "--template-var",
            help="NAME=VALUE for --whatsapp-template (1=Ann); VALUE may hold {text} and "
            "{instance_id}; repeat for several. Default: the channel's template_variables.",
        ),
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """Start a conversation with CONTACT: CREATED, or QUEUED behind a live one.

    The first message is written and delivered at once unless --defer is given;
    a first message outside the sending window waits for it.
    """
    from relay.api import parse_meta

    view = state.relay().start(
        contact,
        objective,
        todo,
        defer=defer,
        heartbeat=heartbeat,
        max_followups=max_followups,
        channel=channel,
        agent=agent,
        window=window,
        subject=subject,
        meta=parse_meta(meta or []),
        result_schema=_read_schema(schema) if schema else None,
        campaign=campaign,
        template_sid=whatsapp_template,
        template_variables=parse_meta(template_var or [], "--template-var"),
    )
    if view.first_turn_note:
        render.warn(view.first_turn_note)
    if view.first_message_status not in (None, "sent"):
        render.warn(_undelivered_first(view))
    if json_out:
        render.emit_json(view.to_json())
        return
    _state_line(view)
    if view.first_message_status:
        render.line(f"{view.first_message_status}: {view.first_message}")


def _undelivered_first(view: InstanceView) -> str:
    later = (
        "" if view.first_message_status in ("failed", "blocked")
        else "; the daemon or `relay tick` will retry"
    )
    return f"the first message was not delivered ({view.first_message_status}){later}"


def _read_schema(path: str) -> object:
    import json
    from pathlib import Path

    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidInput(f"cannot read --schema {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"--schema {path} is not JSON: {exc}") from None


def list_(
    state_filter: Annotated[
        str | None, typer.Option("--state", "-s", help="Only instances in this state.")
    ] = None,
    contact: Annotated[str | None, typer.Option(help="Only instances with this contact.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many, newest first.")] = 50,
    campaign: Annotated[str | None, typer.Option(help="Only instances of this campaign.")] = None,
    results: Annotated[
        bool, typer.Option("--results", help="With --json: include each one's result.")
    ] = False,
    json_out: JsonOption = False,
) -> None:
    """List instances, newest first."""
    relay = state.relay()
    views = relay.instances(state=state_filter, contact=contact, limit=limit, campaign=campaign)
    if json_out:
        data = [v.to_json() for v in views]
        if results:
            found = {r.id: r.to_json() for r in relay.results([v.id for v in views])}
            for item in data:
                item["result"] = found.get(item["id"])
        render.emit_json(data)
        return
    render_list(views)


LIST_COLUMNS = (
    render.Col("id"),
    render.Col("contact"),
    render.Col("state"),
    render.Col("follow-ups", justify="right", optional=True),
    render.Col("todos", justify="right", optional=True),
    render.Col("objective", "text"),
    render.Col("reason", "text"),
    render.Col("created", optional=True),
)


def render_list(views: list[InstanceView]) -> None:
    render.table(
        "instances",
        LIST_COLUMNS,
        (
            [
                v.id,
                v.contact,
                render.state_text(v.state, f" ({v.previous_state})" if v.previous_state else ""),
                _followups(v),
                f"{sum(t.status in ('completed', 'skipped') for t in v.todos)}/{len(v.todos)}",
                v.objective,
                v.reason or "",
                render.when(v.created_at),
            ]
            for v in views
        ),
    )


def show(
    instance_id: Annotated[str, typer.Argument(metavar="ID", help="Instance id or unique prefix.")],
    json_out: JsonOption = False,
) -> None:
    """Show one instance: objective, todos, state, follow-ups, next heartbeat, reasons."""
    view = state.relay().get(instance_id)
    if json_out:
        render.emit_json(view.to_json())
    else:
        print_instance(view)


def _print_messages(messages: list[MessageView]) -> None:
    render.table(
        "transcript",
        ["#", "time", "from", "status", render.Col("text", "wrap")],
        (
            [
                m.id,
                render.when(m.created_at),
                m.author,
                m.status,
                m.text,
            ]
            for m in messages
        ),
    )


def transcript(
    instance_id: Annotated[str, typer.Argument(metavar="ID")],
    raw: Annotated[
        bool,
        typer.Option("--raw", help="Also show each inbound message as received (whole emails)."),
    ] = False,
    json_out: JsonOption = False,
) -> None:
    """Show the conversation's messages in order, with delivery status."""
    messages = state.relay().transcript(instance_id)
    if json_out:
        render.emit_json([m.to_json(raw=raw) for m in messages])
        return
    _print_messages(messages)
    for m in messages if raw else []:
        if m.raw:
            typer.echo(f"\n--- message {m.id} as received ---\n{m.raw.rstrip()}")


def history(
    instance_id: Annotated[str, typer.Argument(metavar="ID")],
    commands: Annotated[
        bool,
        typer.Option(
            "--commands",
            help="Also list the operator commands (who ran what, with which arguments): "
            "the audit log.",
        ),
    ] = False,
    json_out: JsonOption = False,
) -> None:
    """Show the transition log: every state change with event, actor and reason, and the
    operator commands that caused them."""
    rows = state.relay().history(instance_id, commands=commands)
    if json_out:
        render.emit_json([r.to_json() for r in rows])
        return
    render.table(
        "history",
        ["time", "from", "to", "event", "actor", render.Col("reason", "wrap")],
        (
            [
                render.when(r.at),
                render.state_text(r.from_state) if r.from_state else "-",
                render.state_text(r.to_state) if r.to_state else "-",
                r.event if r.kind != "command" else f"$ {r.event}",
                r.actor,
                r.reason if r.kind != "command" else render.arguments(r.args or {}),
            ]
            for r in rows
        ),
    )


def _parse_until(text: str) -> datetime:
    now = state.relay().now()
    try:
        return now + parse_duration(text)
    except InvalidInput:
        pass
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(
            f"invalid --until {text!r}: give a duration (2h) or an ISO time"
        ) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def pause(
    instance_id: Annotated[str, typer.Argument(metavar="ID")],
    reason: Annotated[str | None, typer.Option(help="Why; kept in the history.")] = None,
    until: Annotated[
        str | None,
        typer.Option(help="Snooze: resume by itself after a duration (2h) or at an ISO time."),
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """Pause an instance, recording its state; heartbeats stop and keep their time left."""
    moment = _parse_until(until) if until else None
    view = state.relay().pause(instance_id, reason=reason, until=moment)
    _report(view, json_out)


def resume(
    instance_id: Annotated[str, typer.Argument(metavar="ID")],
    json_out: JsonOption = False,
) -> None:
    """Resume a paused instance (to its prior state) or one waiting for a human (to ACTIVE)."""
    _report(state.relay().resume(instance_id), json_out)


def cancel(
    instance_id: Annotated[str, typer.Argument(metavar="ID")],
    reason: Annotated[str | None, typer.Option(help="Why; kept in the history.")] = None,
    json_out: JsonOption = False,
) -> None:
    """Cancel an instance: FAILED with reason "cancelled"; nothing more is sent."""
    _report(state.relay().cancel(instance_id, reason=reason), json_out)


def _report(view: InstanceView, json_out: bool) -> None:
    if json_out:
        render.emit_json(view.to_json())
    else:
        _state_line(view)


def send(
    instance_id: Annotated[str, typer.Argument(metavar="ID")],
    text: Annotated[str, typer.Argument(help="The message to send to the contact.")],
    json_out: JsonOption = False,
) -> None:
    """Step in: send an operator message on the conversation's channel."""
    message = state.relay().send(instance_id, text)
    report_delivery(deliver_now(message), json_out)


def report_delivery(message: MessageView, json_out: bool) -> None:
    """What became of a message handed to its channel now (``send``, ``retry``)."""
    if json_out:
        render.emit_json(message.to_json())
        return
    why = f": {message.last_error}" if message.last_error else ""
    if message.status == "sent":
        render.line(f"sent to {message.contact} (message {message.id})")
    elif message.status in ("queued", "sending"):
        render.line(
            f"queued for {message.contact} (message {message.id}, {message.status}{why}); "
            "the daemon or `relay tick` will deliver it"
        )
    else:
        # Failed for good (or blocked): saying "queued" would promise a delivery.
        render.line(
            f"not delivered to {message.contact} (message {message.id}, {message.status}{why})"
        )


def deliver_now(message: MessageView) -> MessageView:
    """Try the message now; if that cannot happen, it stays queued for the daemon."""
    try:
        return state.relay().deliver(message.id)
    except Exception as exc:
        render.warn(f"could not deliver now ({exc}); the message stays queued")
        return message


def receive(
    contact: Annotated[str, typer.Argument(help="The sender's phone number or email address.")],
    text: Annotated[str, typer.Argument(help="The message text.")],
    json_out: JsonOption = False,
) -> None:
    """Record an inbound message from a contact, as a channel would."""
    message = state.relay().receive(contact, text)
    if json_out:
        render.emit_json(message.to_json())
        return
    where = f"instance {message.instance_id}" if message.instance_id else "no live instance (kept)"
    render.line(f"received from {message.contact} → {where}")


def status(json_out: JsonOption = False) -> None:
    """Instances per state, queue depth, outbox, unrouted inbound, and daemons."""
    view = state.relay().status()
    if json_out:
        render.emit_json(view.to_json())
        return
    _print_status(view)


def _print_status(view: StatusView) -> None:
    render.table(
        "instances by state",
        ["state", render.Col("count", justify="right")],
        ([render.state_text(k), v] for k, v in sorted(view.states.items())),
    )
    render.fields(
        [
            ("queue depth", view.queue_depth),
            ("outbox pending", view.outbox_pending),
            ("outbox failed", view.outbox_failed),
            ("unrouted inbound", view.unrouted_inbound),
            ("work due", view.work_due),
            ("live daemons", len(view.daemons)),
            (
                "last daemon seen",
                render.when(view.last_daemon_seen) if view.last_daemon_seen else "never",
            ),
        ]
    )
    if view.daemons:
        now = state.relay().now()
        render.table(
            "live daemons",
            ["id", "host", "pid", "started", "last pulse"],
            (
                [d.id, d.host, d.pid, render.when(d.started_at), render.ago(d.last_pulse_at, now)]
                for d in view.daemons
            ),
        )
    for warning in view.warnings:
        render.warn(warning)


def register(app: typer.Typer) -> None:
    app.command()(start)
    app.command("list")(list_)
    app.command()(show)
    app.command()(transcript)
    app.command()(history)
    app.command()(pause)
    app.command()(resume)
    app.command()(cancel)
    app.command()(send)
    app.command()(receive)
    app.command()(status)
