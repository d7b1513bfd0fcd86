"""Campaigns: a conversation per row of a CSV file (``relay import``).

The objective and todos are templates filled from the row's columns
(``{name}``, ``{order}``); every row is checked against them before anything
starts. Then each row is either fully started (its contact, conversation,
todos and first transition commit together) or reported with its line number
and the reason: bad address, opted out, undeliverable, duplicate.

Re-running an import starts nothing twice: each row's import key (a hash of
the campaign, the contact and the objective) is stored on its conversation
under a unique index. The first turns are left to the daemon (or ``relay
tick``), so a large file is stored in seconds, many rows per transaction.
"""

from __future__ import annotations

import csv
import hashlib
import string
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import IntegrityError

from relay.core.errors import Erased, InvalidInput, NoConsent, OptedOut, RelayError, Undeliverable
from relay.engine.verbs import admission, ladders, starting
from relay.store import contacts, reads
from relay.store.tables import IMPORT_KEY_INDEX

if TYPE_CHECKING:
    from relay.engine.runtime import Context
    from relay.engine.verbs.new_conversation import NewConversation

CONTACT_COLUMNS = ("contact", "phone", "email", "address", "to", "e164", "phone_e164", "wa_id")
#: Contact columns declared E.164: their digits carry the country code even without "+".
E164_COLUMNS = ("e164", "phone_e164", "wa_id")
TIMEZONE_COLUMNS = ("timezone", "time_zone", "tz")
#: Columns naming the row's channel, or its ladder (``whatsapp,sms,email``).
CHANNEL_COLUMNS = ("channels", "channel")
#: Rows per transaction: large enough to be quick, small enough to keep locks short.
BATCH = 500
MAX_REPORTED_ERRORS = 5


@dataclass(frozen=True)
class ImportRow:
    """One data row of the file: its physical line number and its columns."""

    line: int
    columns: dict[str, str]


@dataclass(frozen=True)
class RowReport:
    line: int
    contact: str
    started: bool
    reason: str | None = None
    instance_id: str | None = None
    state: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "contact": self.contact,
            "started": self.started,
            "reason": self.reason,
            "instance_id": self.instance_id,
            "state": self.state,
        }


@dataclass
class ImportReport:
    campaign: str | None
    dry_run: bool
    rows: list[RowReport] = field(default_factory=list)

    @property
    def started(self) -> int:
        return sum(r.started for r in self.rows)

    @property
    def skipped(self) -> list[RowReport]:
        return [r for r in self.rows if not r.started]

    def to_json(self) -> dict[str, Any]:
        return {
            "campaign": self.campaign,
            "dry_run": self.dry_run,
            "rows": len(self.rows),
            "started": self.started,
            "skipped": len(self.skipped),
            "results": [r.to_json() for r in self.rows],
        }


# -- reading and checking the file ----------------------------------------------------


def read_rows(path: Path) -> list[ImportRow]:
    """The file's data rows (header first; UTF-8, a BOM is fine)."""
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            if not reader.fieldnames:
                raise InvalidInput(f"{path}: empty file (the first line must name the columns)")
            header = [name.strip() for name in reader.fieldnames]
            return list(_rows(reader, header))
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise InvalidInput(f"{path}: not a UTF-8 CSV file ({exc})") from None


def _rows(reader: csv.DictReader[str], header: list[str]) -> Iterator[ImportRow]:
    for raw in reader:
        values = [raw.get(name) for name in reader.fieldnames or ()]
        columns = {h: (v or "").strip() for h, v in zip(header, values, strict=True)}
        if any(columns.values()):
            yield ImportRow(reader.line_num, columns)


def template_fields(template: str) -> list[str]:
    """The column names a template uses; ``{}`` and ``{0}`` are refused."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise InvalidInput(f"template {template!r}: {exc}") from None
    names = []
    for _literal, name, _spec, _conversion in parsed:
        if name is None:
            continue
        base = name.split(".")[0].split("[")[0]
        if not base or base.isdigit():
            raise InvalidInput(f"template {template!r}: name the column, as in {{name}}")
        names.append(base)
    return names


def fill(template: str, row: ImportRow) -> str:
    """The template filled from the row; a missing or empty column names the line."""
    for name in template_fields(template):
        if name not in row.columns:
            known = ", ".join(row.columns)
            raise InvalidInput(
                f"line {row.line}: no column {name!r} for {{{name}}} (columns: {known})"
            )
        if not row.columns[name]:
            raise InvalidInput(f"line {row.line}: column {name!r} is empty (used as {{{name}}})")
    try:
        return template.format_map(row.columns)
    except (ValueError, KeyError, IndexError, AttributeError) as exc:
        raise InvalidInput(f"line {row.line}: template {template!r}: {exc}") from None


def render_all(
    rows: Sequence[ImportRow], objective: str, todos: Sequence[str]
) -> list[tuple[str, tuple[str, ...]]]:
    """Every row's objective and todos, or one error listing the first few bad rows."""
    rendered: list[tuple[str, tuple[str, ...]]] = []
    errors: list[str] = []
    header = rows[0].columns if rows else {}
    for name in (n for t in (objective, *todos) for n in template_fields(t)):
        if name not in header:
            raise InvalidInput(
                f"nothing was started: line {rows[0].line}: no column {name!r} for {{{name}}} "
                f"(columns: {', '.join(header)})"
            )
    for row in rows:
        try:
            rendered.append((fill(objective, row), tuple(fill(t, row) for t in todos)))
        except InvalidInput as exc:
            errors.append(exc.message)
    if errors:
        more = len(errors) - MAX_REPORTED_ERRORS
        shown = "; ".join(errors[:MAX_REPORTED_ERRORS])
        suffix = f"; and {more} more row(s)" if more > 0 else ""
        raise InvalidInput(f"nothing was started: {shown}{suffix}")
    return rendered


def contact_column(rows: Sequence[ImportRow]) -> str:
    header = list(rows[0].columns) if rows else []
    for name in header:
        if name.lower() in CONTACT_COLUMNS:
            return name
    raise InvalidInput(
        f"no contact column: name one of {', '.join(CONTACT_COLUMNS)} (columns: "
        f"{', '.join(header) or 'none'})"
    )


def import_key(campaign: str | None, address: str, objective: str) -> str:
    text = "\x1f".join((campaign or "", address, objective))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:40]


# -- planning: each row becomes a conversation to create, or a reason ---------------------


@dataclass(frozen=True)
class Options:
    objective: str
    todos: tuple[str, ...]
    campaign: str | None = None
    heartbeat: str | None = None
    max_followups: int | None = None
    channel: str | None = None
    agent: str | None = None
    window: str | None = None
    fallback_after: str | None = None  # the silence before a ladder moves down


def plan(
    rt: Context, rows: Sequence[ImportRow], options: Options
) -> list[tuple[ImportRow, NewConversation | str]]:
    """Each row's conversation, or why it cannot start (checked outside any transaction)."""
    if not rows:
        return []
    column = contact_column(rows)
    rendered = render_all(rows, options.objective, options.todos)
    checked: dict[tuple[str, str], None] = {}
    planned: list[tuple[ImportRow, NewConversation | str]] = []
    seen: set[str] = set()
    for row, (objective, todos) in zip(rows, rendered, strict=True):
        outcome = _plan_row(rt, row, column, objective, todos, options, checked)
        if not isinstance(outcome, str):
            if outcome.import_key in seen:
                outcome = "duplicate (an earlier row of this file)"
            else:
                seen.add(outcome.import_key or "")
        planned.append((row, outcome))
    return planned


def _plan_row(
    rt: Context,
    row: ImportRow,
    column: str,
    objective: str,
    todos: tuple[str, ...],
    options: Options,
    checked: dict[tuple[str, str], None],
) -> NewConversation | str:
    from relay.engine.verbs.new_conversation import check_timezone, clean_consent

    columns = row.columns
    zone = next((columns[c] for c in columns if c.lower() in TIMEZONE_COLUMNS and columns[c]), None)
    channel = next((columns[c] for c in CHANNEL_COLUMNS if columns.get(c)), options.channel)
    try:
        declared = column.lower() in E164_COLUMNS and columns[column].isdigit()
        spec = starting.prepare(
            rt,
            "+" + columns[column] if declared else columns[column],
            objective,
            todos,
            heartbeat=options.heartbeat,
            max_followups=options.max_followups,
            channel=channel,
            agent=options.agent,
            window=options.window,
            campaign=options.campaign,
        )
        if zone:
            check_timezone(zone)
        others = ladders.row_addresses(rt, columns, column)
        consent = clean_consent(admission.consent_of(columns))
        spec = replace(spec, addresses=others)
        spec, problem = ladders.settle_row(rt, spec, checked, options.fallback_after)
    except RelayError as exc:
        return _reason(exc, columns[column])
    if problem:
        return f"undeliverable: {problem}"
    skip = (*TIMEZONE_COLUMNS, admission.CONSENT_COLUMN, *ladders.ADDRESS_COLUMNS)
    fields = {k: v for k, v in columns.items() if k != column and k.lower() not in skip and v}
    for name in CHANNEL_COLUMNS:
        fields.pop(name, None)
    key = import_key(options.campaign, spec.address, spec.objective)
    spec = replace(spec, import_key=key, contact_fields=fields or None, timezone=zone)
    return replace(spec, consent=consent)


def _reason(exc: RelayError, contact: str) -> str:
    if not contact:
        return "bad address: the contact column is empty"
    if isinstance(exc, (Erased, NoConsent)):
        return exc.message
    if isinstance(exc, OptedOut):
        return "opted out"
    if isinstance(exc, Undeliverable):
        return f"undeliverable: {exc.message}"
    if "phone" in exc.message or "email" in exc.message or "contact" in exc.message:
        return f"bad address: {exc.message}"
    return exc.message


# -- running ------------------------------------------------------------------------


def run(
    rt: Context,
    planned: Sequence[tuple[ImportRow, NewConversation | str]],
    *,
    campaign: str | None,
    dry_run: bool,
    progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Start each planned row (or, with ``dry_run``, say what would happen)."""
    report = ImportReport(campaign, dry_run)
    for start in range(0, len(planned), BATCH):
        chunk = planned[start : start + BATCH]
        report.rows += _run_chunk(rt, chunk, dry_run)
        if progress is not None:
            progress(len(chunk))
    return report


def _run_chunk(
    rt: Context, chunk: Sequence[tuple[ImportRow, NewConversation | str]], dry_run: bool
) -> list[RowReport]:
    specs = [spec for _, spec in chunk if not isinstance(spec, str)]
    with rt.store.transaction() as session:
        done = reads.import_keys_present(session, [s.import_key or "" for s in specs])
        known = contacts.by_addresses(session, [s.address for s in specs])
        refused = admission.refusals(session, rt, specs, known)
        now = rt.now()
        results: dict[int, RowReport] = {}
        startable: list[tuple[ImportRow, NewConversation]] = []
        for row, spec in chunk:
            if isinstance(spec, str):
                contact = row.columns.get(_first_contact_column(row), "")
                results[row.line] = RowReport(row.line, contact, False, spec)
                continue
            reason = _blocked(spec, done, known) or refused.get(spec.address)
            if reason or dry_run:
                results[row.line] = RowReport(row.line, spec.address, not reason, reason)
            else:
                startable.append((row, spec))
        if dry_run:
            session.rollback()
        elif startable:
            results.update(_start_rows(rt, session, startable, now))
    return [results[row.line] for row, _ in chunk]


def _start_rows(
    rt: Context, session: Any, startable: list[tuple[ImportRow, NewConversation]], now: Any
) -> dict[int, RowReport]:
    """All at once; should that break a unique index (the same import running
    twice at once), one row at a time, each in its own savepoint."""
    from relay.engine.verbs import bulk

    try:
        with session.begin_nested():
            made = bulk.create_many(rt, session, [s for _, s in startable], now, "import")
    except IntegrityError:
        return {row.line: _start_row(rt, session, row, spec, now) for row, spec in startable}
    return {
        row.line: (
            RowReport(row.line, spec.address, False, outcome)
            if isinstance(outcome, str)
            else RowReport(row.line, spec.address, True, None, *outcome)
        )
        for (row, spec), outcome in zip(startable, made, strict=True)
    }


def _first_contact_column(row: ImportRow) -> str:
    return next((c for c in row.columns if c.lower() in CONTACT_COLUMNS), "")


def _blocked(spec: NewConversation, done: set[str], known: dict[str, Any]) -> str | None:
    if spec.import_key in done:
        return "duplicate (started by an earlier import)"
    person = known.get(spec.address)
    if person is not None and person.opted_out_at is not None:
        return "opted out"
    if person is not None and person.undeliverable_at is not None:
        return f"undeliverable: {person.undeliverable_reason}"
    return None


def _start_row(
    rt: Context, session: Any, row: ImportRow, spec: NewConversation, now: Any
) -> RowReport:
    try:
        with session.begin_nested():
            instance = starting.create(rt, session, spec, now, actor="import")
    except IntegrityError as exc:
        from relay.store.queries import is_violation

        if not is_violation(exc, IMPORT_KEY_INDEX, "instances.import_key"):
            raise
        return RowReport(row.line, spec.address, False, "duplicate (started meanwhile)")
    except RelayError as exc:
        return RowReport(row.line, spec.address, False, _reason(exc, spec.address))
    return RowReport(row.line, spec.address, True, None, instance.id, instance.state)
