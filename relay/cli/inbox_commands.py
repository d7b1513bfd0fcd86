"""``relay inbox`` (inbound no conversation took) and ``relay retry`` (a failed delivery)."""

from __future__ import annotations

from typing import Annotated

import typer

from relay.cli import render
from relay.cli.instance_commands import deliver_now
from relay.cli.instance_render import report_delivery
from relay.cli.session import JsonOption, state


def inbox(
    kind: Annotated[
        list[str] | None,
        typer.Option(
            "--kind", help="unrouted, late or rejected; repeat for several (default: all)."
        ),
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many, newest first.")] = 50,
    json_out: JsonOption = False,
) -> None:
    """Inbound messages no conversation took: from senders with no live conversation
    (unrouted), replies after a conversation ended (late), unusable senders (rejected)."""
    items = state.relay().inbox(kinds=kind, limit=limit)
    if json_out:
        render.emit_json([i.to_json() for i in items])
        return
    render.table(
        "inbox",
        [
            render.Col("kind"),
            render.Col("#", justify="right"),
            render.Col("time", optional=True),
            render.Col("from"),
            render.Col("conversation", optional=True),
            render.Col("text", "text"),
        ],
        ([i.kind, i.id, render.when(i.at), i.sender, i.instance_id or "-", i.text] for i in items),
        empty="The inbox is empty: every inbound message went to its conversation.",
    )


def retry(
    message_id: Annotated[int, typer.Argument(metavar="MESSAGE", help="The message number.")],
    json_out: JsonOption = False,
) -> None:
    """Deliver a failed message again, or one whose fate a crash left unknown
    (`relay doctor` lists those; the contact may get it twice). Its conversation
    must still be live."""
    message = state.relay().retry(message_id)
    report_delivery(deliver_now(message), json_out)


def register(app: typer.Typer) -> None:
    app.command()(inbox)
    app.command()(retry)
