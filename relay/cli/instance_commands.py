"""Conversation lifecycle commands: start, list, show, transcript, history, pause,
resume, cancel, send, receive, status."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer

from relay.cli import instance_render, render
from relay.cli.session import JsonOption, state
from relay.core.durations import parse_duration
from relay.core.errors import InvalidInput

if TYPE_CHECKING:
    from relay.api import MessageView


# The options of ``relay start``, named so its signature reads at a glance.
ContactArgument = Annotated[str, typer.Argument(help="Phone number (any format) or email address.")]

ObjectiveOption = Annotated[
    str, typer.Option("--objective", "-o", help="What the conversation is for.")
]

TodoOption = Annotated[
    list[str],
    typer.Option(
        "--todo",
        "-t",
        help="A checklist item; repeat for several. End it with ::KIND for a structured "
        "answer: text, date, time, datetime, number, yesno, email, phone or "
        'choice(a,b,c); a trailing ? makes it optional ("Which day?::date", '
        '"Pick one::choice(mon,tue)", "Anything else?::text?").',
    ),
]

HeartbeatOption = Annotated[
    str | None,
    typer.Option(help="Silence before a follow-up: 90s, 30m, 2h, 1d. Default from config (30m)."),
]

MaxFollowupsOption = Annotated[
    int | None,
    typer.Option("--max-followups", help="Follow-ups before abandoning. Default 5."),
]

ChannelOption = Annotated[
    str | None,
    typer.Option(
        help="Channel name (default: [defaults] channel), or a ladder such as "
        "whatsapp,sms,email: it starts on the first that reaches the contact and moves to the "
        "next when a message is undeliverable or after --fallback-after of silence "
        "(docs/fallback.md)."
    ),
]
FallbackAfterOption = Annotated[
    str | None,
    typer.Option(
        help="With a channel ladder: the contact's silence after a message went out on one "
        "channel before the next message goes on the next, such as 2d or 12h "
        "(default: [defaults] fallback_after)."
    ),
]

AgentOption = Annotated[str | None, typer.Option(help="Agent backend (default: scripted).")]

WindowOption = Annotated[
    str | None,
    typer.Option(help='Sending window for proactive messages, e.g. "mon-fri 09:00-18:00".'),
]

DeferOption = Annotated[
    bool, typer.Option("--defer", help="Leave the first turn to the daemon or `relay tick`.")
]

SubjectOption = Annotated[
    str | None,
    typer.Option(help="Subject line (email). Default: the objective's first sentence."),
]

MetaOption = Annotated[
    list[str] | None,
    typer.Option(
        "--meta",
        help="key=value of your own, kept on the conversation and returned in every "
        "event and in show/result; repeat for several.",
    ),
]

SchemaOption = Annotated[
    str | None,
    typer.Option(
        "--schema",
        help="A JSON Schema file for the whole result: an object whose properties are "
        'the todo ids ("1", "2", ...); each answer is checked against its property.',
    ),
]

WhatsappTemplateOption = Annotated[
    str | None,
    typer.Option(
        "--whatsapp-template",
        help="An approved Content SID (HX...) sent when WhatsApp's 24-hour window is "
        "closed, instead of the channel's template_sid.",
    ),
]
TemplateVarOption = Annotated[
    list[str] | None,
    typer.Option(
        "--template-var",
        help="NAME=VALUE for --whatsapp-template (1=Ann); VALUE may hold {text} and "
        "{instance_id}; repeat for several. Default: the channel's template_variables.",
    ),
]
CampaignOption = Annotated[
    str | None, typer.Option(help="Tag it with a campaign (list, watch, stats filter by it).")
]
ApprovalOption = Annotated[
    str | None,
    typer.Option(
        "--approval",
        help="none | first | all: the agent's messages a person approves (`relay approve`) "
        "before they go out (default: [agent] approval).",
    ),
]
ConsentOption = Annotated[
    str | None,
    typer.Option(
        "--consent",
        help='Where and when CONTACT consented ("web form 2026-03-01"); kept on the contact.',
    ),
]


def start(
    contact: ContactArgument,
    objective: ObjectiveOption,
    todo: TodoOption,
    heartbeat: HeartbeatOption = None,
    max_followups: MaxFollowupsOption = None,
    channel: ChannelOption = None,
    agent: AgentOption = None,
    window: WindowOption = None,
    defer: DeferOption = False,
    subject: SubjectOption = None,
    meta: MetaOption = None,
    schema: SchemaOption = None,
    campaign: CampaignOption = None,
    whatsapp_template: WhatsappTemplateOption = None,
    template_var: TemplateVarOption = None,
    approval: ApprovalOption = None,
    fallback_after: FallbackAfterOption = None,
    consent: ConsentOption = None,
    json_out: JsonOption = False,
) -> None:
    """Start a conversation with CONTACT: CREATED, or QUEUED behind a live one.

    The first message is written and delivered at once unless --defer is given;
    a first message outside the sending window waits for it; with --approval first
    or all it waits as a draft for `relay approve`.
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
        approval=approval,
        fallback_after=fallback_after,
        consent=consent,
    )
    instance_render.print_started(view, json_out=json_out)


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
    # One more than asked says whether the list stopped at its limit.
    views = relay.instances(state=state_filter, contact=contact, limit=limit + 1, campaign=campaign)
    more = len(views) > limit
    views = views[:limit]
    if json_out:
        data = [v.to_json() for v in views]
        if results:
            found = {r.id: r.to_json() for r in relay.results([v.id for v in views])}
            for item in data:
                item["result"] = found.get(item["id"])
        render.emit_json(data)
        return
    instance_render.render_list(views)
    if more:
        render.note(f"Showing the newest {limit}; --limit {limit * 4} shows more.")


def show(
    instance_id: Annotated[str, typer.Argument(metavar="ID", help="Instance id or unique prefix.")],
    json_out: JsonOption = False,
) -> None:
    """Show one instance: objective, todos, state, follow-ups, next heartbeat, reasons."""
    view = state.relay().get(instance_id)
    if json_out:
        render.emit_json(view.to_json())
    else:
        instance_render.print_instance(view, state.relay().now())


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
    instance_render.print_messages(messages)
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
    instance_render.print_history(rows)


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
    instance_render.print_report(view, json_out)


def resume(
    instance_id: Annotated[str, typer.Argument(metavar="ID")],
    json_out: JsonOption = False,
) -> None:
    """Resume a paused instance (to its prior state) or one waiting for a human (to ACTIVE)."""
    instance_render.print_report(state.relay().resume(instance_id), json_out)


def cancel(
    instance_id: Annotated[str, typer.Argument(metavar="ID")],
    reason: Annotated[str | None, typer.Option(help="Why; kept in the history.")] = None,
    json_out: JsonOption = False,
) -> None:
    """Cancel an instance: FAILED with reason "cancelled"; nothing more is sent."""
    instance_render.print_report(state.relay().cancel(instance_id, reason=reason), json_out)


def send(
    instance_id: Annotated[str, typer.Argument(metavar="ID")],
    text: Annotated[str, typer.Argument(help="The message to send to the contact.")],
    json_out: JsonOption = False,
) -> None:
    """Step in: send an operator message on the conversation's channel."""
    message = state.relay().send(instance_id, text)
    instance_render.report_delivery(deliver_now(message), json_out)


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
    instance_render.print_status(view, state.relay().now())


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
