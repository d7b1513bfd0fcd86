"""``relay stats``: the funnel of a campaign (or of everything), drawn with bars."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from relay.cli import render
from relay.cli.session import JsonOption, state
from relay.core.durations import format_duration

if TYPE_CHECKING:
    from relay.api import StatsView

BAR_WIDTH = 30
OUTCOME_LABELS = {
    "completed": ("completed (all answers)", "done"),
    "ended_early": ("ended with answers missing", "done"),
    "opted_out": ("opted out", "failed"),
    "abandoned": ("abandoned (no reply)", "done"),
    "failed": ("failed or cancelled", "failed"),
    "needs_human": ("waiting on a human", "needs you"),
    "live": ("still live", "live"),
}


def stats(
    campaign: Annotated[str | None, typer.Option(help="Only this campaign.")] = None,
    since: Annotated[
        str | None, typer.Option(help="Only conversations started within this long: 7d, 12h.")
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """The funnel: started, first message delivered, replied, and how they ended;
    reply rate, median time to first reply, follow-ups per reply, failed deliveries,
    and replies by intent when the classifier labels them (`[intent]`)."""
    view = state.relay().stats(campaign=campaign, since=since)
    if json_out:
        render.emit_json(view.to_json())
        return
    _print(view)


def _bar(count: int, total: int, family: str) -> Text:
    if total <= 0:
        return Text("")
    filled = round(BAR_WIDTH * count / total)
    return Text("█" * filled, style=render.FAMILIES[family][0]) + Text("·" * (BAR_WIDTH - filled))


def _share(count: int, total: int) -> str:
    return f"{100 * count / total:.0f}%" if total else "-"


def _print(view: StatsView) -> None:
    total = view.started
    stages = [
        ("started", view.started, "live"),
        ("first message delivered", view.delivered, "live"),
        ("replied", view.replied, "waiting"),
        *((label, view.outcomes[key], fam) for key, (label, fam) in OUTCOME_LABELS.items()),
    ]
    title = f"funnel: {view.campaign}" if view.campaign else "funnel: all conversations"
    columns = [
        render.Col("stage"),
        render.Col("count", justify="right"),
        render.Col("share", justify="right"),
    ]
    rows: list[list[object]] = [[name, count, _share(count, total)] for name, count, _ in stages]
    if render.is_terminal():
        columns.append(render.Col("", optional=True))
        for row, (_, count, fam) in zip(rows, stages, strict=True):
            row.append(_bar(count, total, fam))
    render.table(title, columns, rows)
    median = view.median_first_reply_seconds
    render.fields(
        [
            ("reply rate", f"{100 * view.reply_rate:.1f}%" if view.reply_rate is not None else "-"),
            (
                "median first reply",
                format_duration(timedelta(seconds=round(median))) if median is not None else "-",
            ),
            (
                "follow-ups per reply",
                f"{view.followups_per_reply:.2f}" if view.followups_per_reply is not None else "-",
            ),
            ("follow-ups sent", view.followups),
        ]
    )
    if view.failed_deliveries:
        render.table(
            "failed deliveries by reason",
            [render.Col("reason", "text"), render.Col("count", justify="right")],
            view.failed_deliveries,
        )
    labelled = sum(view.intents.values())
    if labelled:  # the [intent] classifier labelled replies
        render.table(
            "replies by intent",
            ["intent", render.Col("count", justify="right"), render.Col("share", justify="right")],
            [[label, n, _share(n, labelled)] for label, n in view.intents.items() if n],
        )


def register(app: typer.Typer) -> None:
    app.command()(stats)
