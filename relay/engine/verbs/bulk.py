"""Creating many conversations in one statement per table (``relay import``).

The same rows :func:`relay.engine.verbs.starting.create` writes, for a batch:
contacts found or inserted, locked together, their slots read once; each
conversation CREATED (taking its contact's slot) or QUEUED behind the holder
(the state machine decides: ``next_state``), with its todos and transition
rows. A batch that breaks a unique index (an import run twice at once) raises,
and the caller falls back to one row at a time.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from relay.core.errors import RelayError
from relay.core.states import INITIAL, Event, State, next_state
from relay.core.values import TodoStatus
from relay.engine.contacts.addresses import kind_of
from relay.engine.conversation import transitions
from relay.engine.verbs.ladders import give_addresses
from relay.engine.verbs.new_conversation import merge_contact_fields
from relay.store import bulk_inserts, contacts
from relay.store.ids import new_instance_id
from relay.store.models import Contact

if TYPE_CHECKING:
    from relay.engine.runtime import Runtime
    from relay.engine.verbs.new_conversation import NewConversation

QUEUED_REASON = "another conversation with this contact is live"


def create_many(
    relay: Runtime, session: Session, specs: list[NewConversation], now: datetime, actor: str
) -> list[tuple[str, str] | str]:
    """For each spec, ``(instance id, state)`` or the reason it was not started."""
    people = _contacts(relay, session, [s.address for s in specs], now)
    locked = contacts.lock_many(session, [p.id for p in people.values()])
    busy = contacts.slots_taken(session, list(locked))
    rows: dict[str, list[dict[str, Any]]] = {"instances": [], "todos": [], "changes": []}
    results: list[tuple[str, str] | str] = []
    for spec in specs:
        person = people[spec.address]
        state = locked[person.id]
        if state.opted_out_at is not None:
            results.append("opted out")
            continue
        if state.undeliverable_at is not None:
            results.append(f"undeliverable: {state.undeliverable_reason}")
            continue
        try:
            give_addresses(session, person, spec, now)
        except RelayError as exc:
            results.append(exc.message)
            continue
        merge_contact_fields(person, spec, now)
        queued = person.id in busy
        busy.add(person.id)
        results.append(_rows(relay, spec, person.id, queued, now, actor, rows))
    if rows["instances"]:
        bulk_inserts.insert_conversations(
            session, rows["instances"], rows["todos"], rows["changes"]
        )
    return results


def _contacts(
    relay: Runtime, session: Session, addresses: list[str], now: datetime
) -> dict[str, Contact]:
    found = contacts.by_addresses(session, addresses)
    missing = sorted(set(addresses) - set(found))
    if missing:
        bulk_inserts.insert_contacts(
            session,
            [
                {"address": a, "kind": kind_of(a), "created_at": now, "updated_at": now}
                for a in missing
            ],
        )
        found = contacts.by_addresses(session, addresses)
        bulk_inserts.insert_contact_addresses(
            session,
            [
                {"contact_id": c.id, "kind": c.kind, "address": c.address, "created_at": now}
                for a, c in found.items()
                if a in missing
            ],
        )
    return found


def _rows(
    relay: Runtime,
    spec: NewConversation,
    contact_id: int,
    queued: bool,
    now: datetime,
    actor: str,
    rows: dict[str, list[dict[str, Any]]],
) -> tuple[str, str]:
    iid = new_instance_id()
    state = next_state(INITIAL, Event.CONTACT_HAS_ACTIVE_INSTANCE) if queued else INITIAL
    window = spec.window or relay.config.settings.defaults.window
    rows["instances"].append(_instance_row(spec, iid, contact_id, state, window, now))
    rows["todos"] += _todo_rows(spec, iid, now)
    rows["changes"] += _creation_rows(iid, state, actor, now)
    return iid, state.value


def _instance_row(
    spec: NewConversation,
    iid: str,
    contact_id: int,
    state: State,
    window: str | None,
    now: datetime,
) -> dict[str, Any]:
    queued = state is not INITIAL
    return {
        "id": iid,
        "contact_id": contact_id,
        "contact_slot": None if queued else contact_id,
        "state": state.value,
        "objective": spec.objective,
        "subject": spec.subject,
        "channel": spec.channel,
        "agent": spec.agent,
        "window": window,
        "heartbeat_seconds": int(spec.heartbeat.total_seconds()),
        "max_followups": spec.max_followups,
        "follow_up_count": 0,
        "version": 1 if queued else 0,
        "turn_attempts": 0,
        "campaign": spec.campaign,
        "import_key": spec.import_key,
        "approval": spec.approval,
        "drafts_pending": 0,
        "ladder": spec.ladder,
        "fallback_seconds": spec.fallback_seconds if spec.ladder else None,
        "created_at": now,
        "updated_at": now,
    }


def _todo_rows(spec: NewConversation, iid: str, now: datetime) -> list[dict[str, Any]]:
    from relay.engine.verbs.new_conversation import answer_columns

    return [
        {
            "instance_id": iid,
            "position": position,
            "text": text,
            "status": TodoStatus.PENDING.value,
            "updated_at": now,
            **answer_columns(spec, position),
        }
        for position, text in enumerate(spec.todos, start=1)
    ]


def _creation_rows(iid: str, state: State, actor: str, now: datetime) -> list[dict[str, Any]]:
    """The record of a creation: start, and the move to QUEUED behind a live conversation."""
    steps: list[tuple[str | None, str, str, str | None]] = [
        (None, INITIAL.value, transitions.CREATION, None)
    ]
    if state is not INITIAL:
        queued = Event.CONTACT_HAS_ACTIVE_INSTANCE.value
        steps.append((INITIAL.value, state.value, queued, QUEUED_REASON))
    return transitions.creation_rows(iid, steps, actor, now)
