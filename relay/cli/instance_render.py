"""How the conversation commands print what they got: instance cards, lists,
transcripts, histories, delivery reports and the status board.

Kept apart from :mod:`relay.cli.instance_commands` (which parses and calls the
API) so each command reads as: parse, call, print.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from rich.text import Text

from relay.cli import render
from relay.core.durations import format_duration
from relay.core.forecasts import describe
from relay.core.states import LIFECYCLE

if TYPE_CHECKING:
    from relay.api import InstanceView, MessageView, StatusView, TransitionView


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
        "ladder",
    }
)


def print_instance(view: InstanceView, now: datetime) -> None:
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
        ("next message", describe(view.forecast) if view.forecast else None),
        ("channel", view.channel),
        ("ladder", " → ".join(view.channels) if len(view.channels) > 1 else None),
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


def print_state_line(view: InstanceView) -> None:
    extra = f" (was {view.previous_state})" if view.previous_state else ""
    render.line(f"{view.id} {view.state}{extra}")


def undelivered_first(view: InstanceView) -> str:
    later = (
        ""
        if view.first_message_status in ("failed", "blocked")
        else "; the daemon or `relay tick` will retry"
    )
    return f"the first message was not delivered ({view.first_message_status}){later}"


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
        empty="No conversations match.",
    )


def print_messages(messages: list[MessageView]) -> None:
    """The transcript; an ``intent`` column when the classifier labelled a reply."""
    labelled = any(m.intent for m in messages)
    columns: list[str | render.Col] = ["#", "time", "from", "channel", "status"]
    columns.append(render.Col("text", "wrap"))
    render.table(
        "transcript",
        [*columns, *(["intent"] if labelled else [])],
        (
            [
                m.id,
                render.when(m.created_at),
                m.author,
                m.channel or "-",
                m.status,
                m.text,
                *([_intent(m)] if labelled else []),
            ]
            for m in messages
        ),
        empty="No messages yet.",
    )


def _intent(message: MessageView) -> str:
    if not message.intent:
        return ""
    day = message.intent_date
    return f"{message.intent} ({day.isoformat()})" if day else message.intent


def print_report(view: InstanceView, json_out: bool) -> None:
    if json_out:
        render.emit_json(view.to_json())
    else:
        print_state_line(view)


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


def print_status(view: StatusView, now: datetime) -> None:
    render.table(
        "instances by state",
        ["state", render.Col("count", justify="right")],
        ([render.state_text(s), view.states.get(s.value, 0)] for s in LIFECYCLE),
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


HISTORY_COLUMNS = ("time", "from", "to", "event", "actor", render.Col("reason", "wrap"))


def print_history(rows: list[TransitionView]) -> None:
    """A table where it fits with states and actors whole and the reason at least
    24 wide; otherwise each change on its own line, its reason indented below (a
    narrow table would fold words and cut states to the same prefix)."""
    cells = [
        [
            render.when(r.at),
            render.state_text(r.from_state) if r.from_state else "-",
            render.state_text(r.to_state) if r.to_state else "-",
            r.event if r.kind != "command" else f"$ {r.event}",
            r.actor,
            _why(r),
        ]
        for r in rows
    ]
    if not rows:
        render.line("No history.")
    elif not render.is_terminal() or render.fits(HISTORY_COLUMNS, cells):
        render.table("history", HISTORY_COLUMNS, cells)
    else:
        for row in rows:
            _history_entry(row)


def _why(row: TransitionView) -> str:
    return row.reason or "" if row.kind != "command" else render.arguments(row.args or {})


def _history_entry(row: TransitionView) -> None:
    line = Text(f"{render.when(row.at)}  ")
    if row.kind == "command":
        line += Text(render.clean(f"$ {row.event}"), style="bold")
    else:
        line += render.state_text(row.from_state) if row.from_state else Text("-")
        line += Text(" → ")
        line += render.state_text(row.to_state) if row.to_state else Text("-")
        line += Text(render.clean(f"  {row.event}"))
    line += Text(render.clean(f"  by {row.actor}"))
    render.styled(line)
    if why := _why(row):
        render.styled(Text(render.clean(f"    {why}"), style="dim"))


def print_started(view: InstanceView, *, json_out: bool) -> None:
    """What ``relay start`` prints: warnings about the first turn on stderr, then
    the conversation (JSON, or its state line and the first message's fate)."""
    if view.first_turn_note:
        render.warn(view.first_turn_note)
    if view.first_message_status == "draft":
        render.warn("the first message waits as a draft for `relay approve` (see `relay drafts`)")
    elif view.first_message_status not in (None, "sent"):
        render.warn(undelivered_first(view))
    if json_out:
        render.emit_json(view.to_json())
        return
    print_state_line(view)
    if view.first_message_status:
        render.line(f"{view.first_message_status}: {view.first_message}")
