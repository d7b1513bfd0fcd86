"""Whether a contact may be written to at all, by what relay holds about consent and
erasure: the checks ``relay import`` makes of a whole chunk of rows at once
(``relay start`` makes the same ones, one contact at a time, in
:meth:`relay.engine.verbs.starting.Starting.create`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from relay.engine.verbs import privacy

if TYPE_CHECKING:
    from relay.engine.runtime import Runtime
    from relay.engine.verbs.new_conversation import NewConversation

#: The CSV column of where and when the contact consented ("web form 2026-03-01").
CONSENT_COLUMN = "consent"
NO_CONSENT = "no consent record ([compliance] require_consent is on)"


def consent_of(columns: Mapping[str, str]) -> str | None:
    """A row's consent column, if it has one with a value."""
    return next((v for k, v in columns.items() if k.lower() == CONSENT_COLUMN and v), None)


def refusals(
    session: Session,
    runtime: Runtime,
    specs: Sequence[NewConversation],
    known: Mapping[str, Any],
) -> dict[str, str]:
    """{address: why not} for the conversations refused: the address was erased, or a
    consent record is required and neither the row nor the contact has one."""
    erased = privacy.erased_among(session, runtime, [s.address for s in specs])
    required = runtime.config.settings.compliance.require_consent
    refused: dict[str, str] = {}
    for spec in specs:
        person = known.get(spec.address)
        if spec.address in erased:
            refused[spec.address] = f"erased on {erased[spec.address].date().isoformat()}"
        elif required and not spec.consent and (person is None or not person.consent):
            refused[spec.address] = NO_CONSENT
    return refused
