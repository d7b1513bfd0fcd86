"""Drafts a person approves: ``relay drafts``, ``relay approve``, ``relay reject``."""

from __future__ import annotations

from typing import Annotated

import typer

from relay.cli import render
from relay.cli.session import JsonOption, state

MessageArgument = Annotated[
    int, typer.Argument(metavar="MESSAGE", help="The draft's message id (`relay drafts`).")
]


def drafts(
    instance: Annotated[
        str | None, typer.Option("--instance", "-i", help="Only this conversation's drafts.")
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """The agent's messages awaiting approval, oldest first: conversation, contact,
    text and how long each has waited (conversations started with --approval)."""
    from datetime import timedelta

    from relay.core.durations import format_duration

    found = state.relay().drafts(instance)
    if json_out:
        render.emit_json([d.to_json() for d in found])
        return
    if not found:
        render.line("no drafts await approval")
        return
    render.table(
        "drafts",
        ["message", "conversation", "contact", "waited", "text"],
        (
            [
                str(d.id),
                d.instance_id,
                d.contact,
                format_duration(timedelta(seconds=int(d.waited_seconds))),
                d.text,
            ]
            for d in found
        ),
    )


def approve(
    message_id: MessageArgument,
    text: Annotated[
        str | None,
        typer.Option("--text", help="Send this instead of the draft (the edit is recorded)."),
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """Send a draft: it is queued like any message, so a pause, an opt-out, a cancel
    or the sending window still holds or drops it. Exit 1 if it is no draft (any more)."""
    from relay.cli.instance_commands import deliver_now
    from relay.cli.instance_render import report_delivery

    message = state.relay().approve(message_id, text=text)
    report_delivery(deliver_now(message), json_out)


def reject(
    message_id: MessageArgument,
    reason: Annotated[
        str, typer.Option("--reason", help="Why: the agent's next turn reads it and writes anew.")
    ],
    json_out: JsonOption = False,
) -> None:
    """Discard a draft; the agent writes a new one, knowing why this one was rejected."""
    message = state.relay().reject(message_id, reason=reason)
    if json_out:
        render.emit_json(message.to_json())
        return
    render.line(f"message {message.id} rejected; the agent writes a new draft")


def register(app: typer.Typer) -> None:
    app.command()(drafts)
    app.command()(approve)
    app.command()(reject)
