"""``relay import``: a conversation per row of a CSV file, with a progress bar."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from relay.cli import render
from relay.cli.instance_commands import FallbackAfterOption
from relay.cli.session import JsonOption, state

if TYPE_CHECKING:
    from relay.api import ImportReport


# The options of ``relay import`` (their help speaks of rows and templates).
CsvArgument = Annotated[
    Path,
    typer.Argument(
        metavar="CSV",
        help="A CSV file with a header: a contact column (contact, phone or email) and any "
        "others (name, timezone, channel, your own).",
    ),
]
ObjectiveOption = Annotated[
    str,
    typer.Option(
        "--objective", "-o", help="What each conversation is for; {column} fills from the row."
    ),
]
TodoOption = Annotated[
    list[str],
    typer.Option("--todo", "-t", help="A checklist item (a template too); repeat for several."),
]
CampaignOption = Annotated[
    str | None, typer.Option(help="Tag the conversations (list, watch, stats filter by it).")
]
DryRunOption = Annotated[
    bool,
    typer.Option("--dry-run", help="Check every row and say what would start; start nothing."),
]
HeartbeatOption = Annotated[
    str | None, typer.Option(help="Silence before a follow-up (default from config).")
]
MaxFollowupsOption = Annotated[
    int | None, typer.Option("--max-followups", help="Follow-ups before abandoning.")
]
ChannelOption = Annotated[
    str | None,
    typer.Option(
        help="Channel, or a ladder such as whatsapp,sms,email, for rows without a channel "
        "or channels column."
    ),
]
AgentOption = Annotated[str | None, typer.Option(help="Agent backend.")]
WindowOption = Annotated[str | None, typer.Option(help="Sending window for first messages.")]


def import_(
    csv_file: CsvArgument,
    objective: ObjectiveOption,
    todo: TodoOption,
    campaign: CampaignOption = None,
    dry_run: DryRunOption = False,
    heartbeat: HeartbeatOption = None,
    max_followups: MaxFollowupsOption = None,
    channel: ChannelOption = None,
    agent: AgentOption = None,
    window: WindowOption = None,
    fallback_after: FallbackAfterOption = None,
    json_out: JsonOption = False,
) -> None:
    """Start a conversation per CSV row. Templates are checked on every row first;
    then each row is started or reported with its line and reason (bad address, opted
    out, undeliverable, duplicate). Re-running the same import starts nothing twice.
    First messages are sent by the daemon (or `relay tick`). Besides the contact column,
    email, phone and telegram columns give the contact's other addresses, and a
    channels column a row's channel ladder (whatsapp,sms,email)."""
    with _progress(json_out) as (on_total, on_rows):
        report = state.relay().import_csv(
            csv_file,
            objective,
            todo,
            campaign=campaign,
            dry_run=dry_run,
            heartbeat=heartbeat,
            max_followups=max_followups,
            channel=channel,
            agent=agent,
            window=window,
            fallback_after=fallback_after,
            on_rows=on_rows,
            on_total=on_total,
        )
    if json_out:
        render.emit_json(report.to_json())
        return
    _print(report)


@contextmanager
def _progress(quiet: bool) -> Iterator[tuple[Any, Any]]:
    """A Rich progress bar on stderr when it is a terminal; callbacks that do nothing
    otherwise."""
    if quiet or not sys.stderr.isatty():
        yield (lambda _total: None), (lambda _rows: None)
        return
    import os

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    console = Console(stderr=True, no_color=bool(os.environ.get("NO_COLOR")))
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        task = progress.add_task("importing", total=None)

        def on_total(total: int) -> None:
            progress.update(task, total=total)

        def on_rows(rows: int) -> None:
            progress.advance(task, rows)

        yield on_total, on_rows


def _print(report: ImportReport) -> None:
    verb = "would start" if report.dry_run else "started"
    tag = f" (campaign {report.campaign})" if report.campaign else ""
    skipped = report.skipped
    render.line(
        f"{verb} {report.started} of {len(report.rows)} row(s){tag}; {len(skipped)} skipped"
    )
    if skipped:
        render.table(
            "skipped rows",
            [
                render.Col("line", justify="right"),
                render.Col("contact"),
                render.Col("reason", "text"),
            ],
            ([r.line, r.contact or "-", r.reason] for r in skipped),
        )
    if report.started and not report.dry_run:
        render.line("first messages go out with the daemon (`relay daemon`) or `relay tick`")


def register(app: typer.Typer) -> None:
    app.command("import")(import_)
