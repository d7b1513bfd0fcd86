"""``relay contact list|show|set|opt-out|opt-in|link``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from relay.cli import render
from relay.cli.session import JsonOption, state
from relay.core.errors import InvalidInput

if TYPE_CHECKING:
    from relay.api import ContactView

contact_app = typer.Typer(help="Inspect contacts and manage opt-outs.", no_args_is_help=True)

ContactArg = Annotated[str, typer.Argument(help="Phone number or email address.")]


def _print(view: ContactView, json_out: bool) -> None:
    if json_out:
        render.emit_json(view.to_json())
        return
    render.fields(
        [
            ("contact", view.address),
            ("kind", view.kind),
            *((f"{kind}", address) for kind, address in view.addresses.items()
              if address != view.address),
            ("time zone", view.timezone or "(default)"),
            ("legal hours", view.legal_hours or "-"),
            ("consent", _consent(view)),
            *((f"field {k}", v) for k, v in view.fields.items()),
            ("opted out", render.when(view.opted_out_at) if view.opted_out_at else "no"),
            *((f"opted out of {kind}", render.when(at))
              for kind, at in view.opted_out_kinds.items()),
            *_undeliverable(view),
            ("live instance", view.live_instance),
            ("queued", ", ".join(view.queued) or "-"),
            *([("in flight", str(view.in_flight))] if view.in_flight else []),
        ]
    )
    if view.unrouted:
        render.table(
            "messages with no live conversation",
            ["#", "time", "text"],
            ([m.id, render.when(m.created_at), m.text] for m in view.unrouted),
        )


def _consent(view: ContactView) -> str:
    if view.consent is None:
        return "none recorded"
    return f"{view.consent} (recorded {render.when(view.consent_at)})"


def _undeliverable(view: ContactView) -> list[tuple[str, object]]:
    mark = view.undeliverable
    if mark is None:
        return [("undeliverable", "no")]
    rows: list[tuple[str, object]] = [
        ("undeliverable", render.when(mark.at)),
        ("  reason", mark.reason or "-"),
    ]
    if mark.bounce_reason or mark.message_id is not None:
        rows.append(("  bounce", mark.bounce_reason or "-"))
        where = f"message {mark.message_id}" if mark.message_id is not None else "-"
        if mark.instance_id:
            where += f" of {mark.instance_id}"
        rows.append(("  bounced", where))
        if mark.error:
            rows.append(("  error", mark.error))
    return rows


@contact_app.command("list")
def list_(
    campaign: Annotated[
        str | None, typer.Option(help="Only contacts with a conversation in this campaign.")
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many, newest first.")] = 100,
    json_out: JsonOption = False,
) -> None:
    """List contacts newest first: name, opt-out, live conversation, queue, fields."""
    rows = state.relay().contacts(campaign=campaign, limit=limit)
    if json_out:
        render.emit_json([r.to_json() for r in rows])
        return
    render.table(
        "contacts",
        [
            render.Col("contact"),
            render.Col("name", "text"),
            render.Col("status"),
            render.Col("live"),
            render.Col("queued", justify="right", optional=True),
            render.Col("conversations", justify="right", optional=True),
            render.Col("fields", "text", optional=True),
        ],
        (
            [
                r.address,
                r.name or "",
                _status(r.opted_out_at is not None, r.undeliverable_at is not None),
                r.live_instance or "-",
                r.queued,
                r.conversations,
                ", ".join(f"{k}={v}" for k, v in r.fields.items() if k != "name"),
            ]
            for r in rows
        ),
        empty="No contacts yet.",
    )


def _status(opted_out: bool, undeliverable: bool) -> str:
    return "opted out" if opted_out else "undeliverable" if undeliverable else "ok"


@contact_app.command()
def show(contact: ContactArg, json_out: JsonOption = False) -> None:
    """Show a contact: opt-out status, live and queued instances, unrouted messages."""
    _print(state.relay().contact(contact), json_out)


@contact_app.command("set")
def set_(
    contact: ContactArg,
    tz: Annotated[
        str | None, typer.Option("--tz", help="IANA time zone, e.g. Europe/Madrid.")
    ] = None,
    email: Annotated[
        str | None, typer.Option(help="The contact's email address (another way to reach them).")
    ] = None,
    phone: Annotated[
        str | None, typer.Option(help="The contact's phone number, for sms and whatsapp.")
    ] = None,
    telegram: Annotated[
        str | None, typer.Option(help="The contact's Telegram chat, as telegram:<chat id>.")
    ] = None,
    consent: Annotated[
        str | None,
        typer.Option(help='Where and when they consented, e.g. "web form 2026-03-01".'),
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """Set contact fields: the time zone sending windows are read in, the consent record,
    and the contact's other addresses (one of each kind; a reply from any of them is the
    contact's, and a channel ladder writes to the one its channel takes)."""
    addresses = {"email": email, "phone": phone, "telegram": telegram}
    given = {kind: value for kind, value in addresses.items() if value is not None}
    view = state.relay().set_contact(contact, timezone=tz, consent=consent, addresses=given)
    _print(view, json_out)


@contact_app.command()
def export(
    contact: ContactArg,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file (default: stdout).")
    ] = None,
) -> None:
    """Print everything held about CONTACT as JSON: the contact, its consent, every
    conversation, message, answer, transition, scoped state and event naming it.

    For a person's request to see their data (GDPR article 15). The export is
    audited (`relay events`). See docs/compliance.md.
    """
    import json

    from relay.core.jsonshape import versioned

    document = state.relay().export_contact(contact)
    text = json.dumps(versioned(document), indent=2, ensure_ascii=False, default=str) + "\n"
    if output is None:
        render.emit_json(document)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"cannot write {output}: {exc.strerror}") from None
    render.line(f"wrote {output}")


@contact_app.command()
def erase(
    contact: ContactArg,
    yes: Annotated[bool, typer.Option("--yes", help="Confirm: this cannot be undone.")] = False,
    json_out: JsonOption = False,
) -> None:
    """Erase CONTACT: delete its conversations, messages, answers, scoped state and
    the events naming it, in one transaction, and keep only a keyed hash of each of
    its addresses, so `relay start` and `relay import` refuse it from then on
    ("erased on DATE", exit code 2).

    Needs the key named by [compliance] erasure_key_env (RELAY_ERASURE_KEY). For a
    person's request to be forgotten (GDPR article 17); see docs/compliance.md.
    """
    if not yes:
        raise InvalidInput("erasing deletes everything about the contact; pass --yes to confirm")
    done = state.relay().erase_contact(contact)
    if json_out:
        render.emit_json(done.to_json())
        return
    rows = ", ".join(f"{n} {table}" for table, n in done.deleted.items()) or "no rows"
    render.line(f"erased {done.contact}: deleted {rows}; {done.suppressed} address(es) suppressed")


ChannelKindOption = Annotated[
    str | None,
    typer.Option(
        help="Only the contact's address of this kind: sms (its phone number, SMS and "
        "WhatsApp), email or telegram (default: the whole contact)."
    ),
]


@contact_app.command("opt-out")
def opt_out(
    contact: Annotated[
        str | None, typer.Argument(help="Phone number or email address (or --file).")
    ] = None,
    reason: Annotated[str, typer.Option(help="Why; kept with the contact.")] = "operator",
    file: Annotated[
        Path | None,
        typer.Option(
            "--file",
            help="Import a do-not-contact list: one address a line, or a CSV with --column.",
        ),
    ] = None,
    column: Annotated[
        str | None, typer.Option(help="With --file: the CSV column holding the addresses.")
    ] = None,
    channel_kind: ChannelKindOption = None,
    json_out: JsonOption = False,
) -> None:
    """Opt a contact out: end its live conversation, fail queued ones, block all delivery
    (with --channel-kind and [compliance] optout_scope = "channel": that kind only).

    It returns once the sends to the contact already under way have settled (at
    most 10 s) and reports them as in_flight: nothing else reaches the contact
    after it returns.

    With --file, opt out every address of a list (idempotent: addresses already
    opted out are counted and left as they are); prints how many were added,
    already there and invalid (each invalid line with its number)."""
    if (contact is None) == (file is None) or (file and channel_kind):
        raise InvalidInput("give either a CONTACT (with --channel-kind or not) or --file FILE")
    if file is None:
        assert contact is not None
        _print(state.relay().opt_out(contact, reason=reason, channel_kind=channel_kind), json_out)
        return
    if column is None and file.suffix.lower() == ".csv":
        raise InvalidInput(f"{file} is a CSV file: name its address column with --column")
    try:
        text = file.read_text("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read {file}: {exc}") from None
    report = state.relay().import_opt_outs(text, column=column, reason=reason)
    if json_out:
        render.emit_json(report.to_json())
        return
    render.line(
        f"opted out {report.added} added, {report.already} already there, "
        f"{len(report.invalid)} invalid"
    )
    for number, value, error in report.invalid:
        render.warn(f"line {number}: {value!r}: {error}")


@contact_app.command("opt-in")
def opt_in(
    contact: ContactArg, channel_kind: ChannelKindOption = None, json_out: JsonOption = False
) -> None:
    """Allow messages to a contact who opted out (they asked to hear from you again):
    wholly, every kind of address with it, or with --channel-kind only that kind."""
    _print(state.relay().opt_in(contact, channel_kind=channel_kind), json_out)


@contact_app.command()
def deliverable(contact: ContactArg, json_out: JsonOption = False) -> None:
    """Clear a contact's undeliverable mark (set by a bounce): it can be reached again.

    The change is audited with the old reason (`relay events`). Messages the mark
    failed stay failed: `relay retry MESSAGE_ID` sends one again.
    """
    _print(state.relay().deliverable(contact), json_out)


@contact_app.command()
def link(
    channel: Annotated[str, typer.Argument(help="A telegram channel, by its name in relay.toml.")],
    contact: ContactArg,
    json_out: JsonOption = False,
) -> None:
    """Print the t.me link that binds a person's Telegram chat to CONTACT.

    A bot cannot write first: send the person this link; when they open it and
    press Start, their chat is bound to CONTACT on CHANNEL, and `relay start
    CONTACT --channel CHANNEL` reaches them there. Needs the channel's
    bot_username setting.
    """
    view = state.relay().contact_link(channel, contact)
    if json_out:
        render.emit_json(view.to_json())
        return
    render.fields(
        [
            ("link", view.link),
            ("contact", view.contact),
            ("channel", view.channel),
            ("bound to", view.bound_to or "(no chat yet: waiting for their Start)"),
        ]
    )


def register(app: typer.Typer) -> None:
    app.add_typer(contact_app, name="contact")
