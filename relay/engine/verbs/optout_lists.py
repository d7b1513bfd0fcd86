"""Importing a do-not-contact list: ``relay contact opt-out --file FILE``.

Operators inherit suppression lists from other tools (one address a line, or a
CSV export with an address column). Importing one is idempotent: an address
already opted out is counted, not touched (its first reason and time stay);
a line that is not an address is reported with its line number, and the
valid ones are still imported, all in one transaction.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from relay.core.errors import InvalidInput

if TYPE_CHECKING:
    from relay.engine.contacts.addresses import Address
    from relay.store.database import Store


@dataclass
class OptOutImport:
    """What an import did: counts, and each invalid line with its reason."""

    added: int = 0
    already: int = 0
    invalid: list[tuple[int, str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "already": self.already,
            "invalid": [{"line": n, "text": t, "error": e} for n, t, e in self.invalid],
        }


def entries(text: str, column: str | None) -> list[tuple[int, str]]:
    """(line number, address) for each non-blank, non-comment line or CSV row."""
    if column is None:
        return [
            (number, line.strip())
            for number, line in enumerate(text.splitlines(), start=1)
            if line.strip() and not line.lstrip().startswith("#")
        ]
    reader = csv.DictReader(io.StringIO(text))
    names = {name.strip().lower(): name for name in reader.fieldnames or []}
    if column.strip().lower() not in names:
        found = ", ".join(reader.fieldnames or []) or "none"
        raise InvalidInput(f"no column {column!r} in the CSV header (columns: {found})")
    key = names[column.strip().lower()]
    rows = []
    for row in reader:
        value = (row.get(key) or "").strip()
        if value:
            rows.append((reader.line_num, value))
    return rows


def import_opt_outs(
    store: Store,
    text: str,
    *,
    address: Callable[[str], Address],
    now: datetime,
    actor: str,
    column: str | None = None,
    reason: str = "operator list",
) -> OptOutImport:
    """Opt out each address of ``text`` (``address`` normalises one as the caller
    does), in one transaction; what was done, line by line for the invalid ones."""
    from relay.engine.contacts import addresses as contacts
    from relay.engine.conversation import audit
    from relay.engine.inbound import ingest as inbound
    from relay.store import contacts as store_contacts

    report = OptOutImport()
    parsed = []
    for number, value in entries(text, column):
        try:
            parsed.append(address(value))
        except InvalidInput as exc:
            report.invalid.append((number, value, str(exc)))
    with store.transaction() as session:
        seen: set[str] = set()
        for one in parsed:
            if one.value in seen:
                report.already += 1
                continue
            seen.add(one.value)
            person = store_contacts.by_address(session, one.value)
            if person is not None and person.opted_out_at is not None:
                report.already += 1
                continue
            person = person or contacts.find_or_create(session, one, now)
            inbound.opt_out(session, person, now, reason=f"operator: {reason}")
            report.added += 1
        args: dict[str, Any] = {"reason": reason, "added": report.added}
        args.update(already=report.already, invalid=len(report.invalid))
        audit.record(session, "opt-out import", None, args, now, actor=actor)
    return report
