"""``relay inspect mail|text|address``: what relay makes of a message, without a database.

Each subcommand calls, through :mod:`relay.api`, the very functions the
daemon calls on what arrives (the mail channel's reading of a mail, the reply
text and opt-out rules, the address normalisation), so its answer is the
daemon's. Nothing is stored and no ``relay.toml`` is needed (when one
is there, its default region is used for phone numbers, as the daemon would).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from relay.cli import render
from relay.cli.session import JsonOption, state
from relay.core.errors import InvalidInput

if TYPE_CHECKING:
    from relay.config import Config

inspect_app = typer.Typer(
    help="Show what relay makes of a mail, a reply's text or an address (no database).",
    no_args_is_help=True,
)


@inspect_app.command()
def mail(
    files: Annotated[list[Path], typer.Argument(help="Raw mails (RFC 5322 files, .eml).")],
    json_out: JsonOption = False,
) -> None:
    """Classify raw mails as the daemon would: reply, bounce (reason, recipients,
    status, original Message-ID), auto_reply (return date), complaint or
    delivery_report; the text the agent would see and whether it opts out.

    One JSON object per file and line with --json (schema: inspect-mail.json).
    """
    from relay.api import inspect_mail

    raws = [(str(path), _read(path)) for path in files]  # all readable before printing
    objects = [inspect_mail(raw, name) for name, raw in raws]
    if json_out:
        for item in objects:
            render.emit_json_line(item)
        return
    render.table(
        "mail",
        [
            render.Col("file"),
            render.Col("kind"),
            render.Col("reason"),
            render.Col("permanent"),
            render.Col("recipients", "text"),
            render.Col("status"),
            render.Col("return date"),
            render.Col("opt-out"),
            render.Col("text", "text", optional=True),
        ],
        (_mail_row(item) for item in objects),
    )


def _mail_row(item: dict[str, Any]) -> list[Any]:
    bounce = item["bounce"] or {}
    auto = item["auto_reply"] or {}
    return [
        item["file"],
        item["kind"],
        bounce.get("reason", "-"),
        _yes(bounce["permanent"]) if bounce else "-",
        ", ".join(bounce.get("recipients", [])) or "-",
        bounce.get("status") or "-",
        auto.get("return_date") or "-",
        _yes(item["opt_out"]),
        " ".join(str(item["text"]).split())[:80],
    ]


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None


@inspect_app.command()
def text(json_out: JsonOption = False) -> None:
    """Read one message a line from standard input; print the text the agent would
    see and whether it opts the sender out, or back in.

    One JSON object per line with --json (schema: inspect-text.json).
    """
    from relay.api import inspect_text

    rows = [inspect_text(line) for line in sys.stdin.read().splitlines()]
    if json_out:
        for row in rows:
            render.emit_json_line(row)
        return
    render.table(
        "text",
        [render.Col("text", "text"), render.Col("opt-out"), render.Col("opt-in")],
        ([r["text"], _yes(r["opt_out"]), _yes(r["opt_in"])] for r in rows),
    )


@inspect_app.command()
def address(
    values: Annotated[list[str], typer.Argument(help="Phone numbers, emails, telegram:<id>.")],
    channel: Annotated[
        str | None,
        typer.Option(help="Read the values as this channel would (its name in relay.toml)."),
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """Normalise contact addresses as relay would (E.164 phone numbers, lower-cased
    emails); print each one's address or why it is refused.

    One JSON object per value and line with --json (schema: inspect-address.json).
    """
    from relay.api import inspect_address

    config = _config()
    region = str(config.settings.defaults.region) if config is not None else "US"
    rows = [inspect_address(value, region, channel, config) for value in values]
    if json_out:
        for row in rows:
            render.emit_json_line(row)
        return
    render.table(
        "addresses",
        [render.Col("input", "text"), render.Col("address"), render.Col("error", "text")],
        ([r["input"], r["address"] or "-", r["error"] or "-"] for r in rows),
    )


def _config() -> Config | None:
    """relay.toml when there is one (its region and channel types, as the daemon reads
    numbers); None without one: ``relay inspect`` needs no configuration."""
    from relay.core.errors import ConfigError

    try:
        return state.config()
    except (ConfigError, OSError):
        return None


def register(app: typer.Typer) -> None:
    app.add_typer(inspect_app, name="inspect")
