"""Starting conversations: check what is asked, create it (CREATED, or QUEUED
behind the contact's live one) and, unless deferred, run its first turn.

Kept apart because starting is the one verb that spans the engine (checks of
backends, the contact's slot, the first turn through the pulse) and ``relay
import`` (:mod:`relay.engine.verbs.campaigns`) reuses its pieces.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from relay.core.errors import InvalidInput, NoConsent, OptedOut, Undeliverable
from relay.core.states import INITIAL, Event
from relay.core.subjects import clean_subject, subject_from_objective
from relay.core.values import TodoStatus
from relay.engine.contacts import addresses as contacts
from relay.engine.contacts.addresses import address_for
from relay.engine.conversation import audit
from relay.engine.conversation.audit import OPERATOR
from relay.engine.runtime import Context
from relay.engine.verbs import backend_checks, ladders
from relay.engine.verbs.conversations import get, transcript, view_of
from relay.engine.verbs.lookups import as_interval
from relay.engine.verbs.new_conversation import (
    MAX_FOLLOWUPS,
    NewConversation,
    answer_columns,
    checked_result_schema,
    clean_campaign,
    clean_consent,
    clean_text,
    merge_contact_fields,
    refuse_empty,
)
from relay.engine.views.instances import InstanceView
from relay.store import contacts as store_contacts
from relay.store import instances, queries
from relay.store.ids import new_instance_id

if TYPE_CHECKING:
    from relay.store.models import Contact, Instance

#: Delivery states of a first message, worst first: what ``start`` reports.
_WORST_FIRST = ("failed", "blocked", "draft", "queued", "sending")


def start(
    rt: Context,
    contact: str,
    objective: str,
    todos: Sequence[str | Mapping[str, Any]],
    *,
    heartbeat: str | timedelta | None = None,
    max_followups: int | None = None,
    channel: str | None = None,
    agent: str | None = None,
    window: str | None = None,
    actor: str = OPERATOR,
    subject: str | None = None,
    meta: Mapping[str, Any] | None = None,
    result_schema: Mapping[str, Any] | None = None,
    campaign: str | None = None,
    template_sid: str | None = None,
    template_variables: Mapping[str, str] | None = None,
    defer: bool = True,
    approval: str | None = None,
    fallback_after: str | timedelta | None = None,
    consent: str | None = None,
) -> InstanceView:
    """CREATED, or QUEUED behind a live one (options: prepare's); first turn unless ``defer``."""
    spec = prepare(
        rt, contact, objective, todos,
        heartbeat=heartbeat, max_followups=max_followups, channel=channel, agent=agent,
        window=window, subject=subject, campaign=campaign, meta=meta,
        result_schema=result_schema, template_sid=template_sid,
        template_variables=template_variables, approval=approval, consent=consent,
    )  # fmt: skip
    # The channels' checks, the rung it starts on (a,b,c: a ladder).
    spec = ladders.settle(rt, spec, fallback_after=fallback_after)
    with rt.store.transaction() as session:
        instance = create(rt, session, spec, rt.now(), actor)
        view = view_of(rt, session, instance)
    if defer or view.state != INITIAL.value:
        return view
    return _first_turn(rt, view)


def _first_turn(rt: Context, view: InstanceView) -> InstanceView:
    """Run the first turn now and say what became of its message; the
    conversation exists whatever happens here (the daemon runs it otherwise).

    The view's ``first_message`` and ``first_message_status`` say what was said and
    whether the channel took it (``sent``), will retry (``queued``), or did not
    (``failed``, ``blocked``); both are None when no first turn ran (deferred, queued
    behind another conversation, held for the window)."""
    from relay.engine.turns.runner import start_now

    try:
        outcome = start_now(rt, view.id)
    except Exception as exc:
        note = f"the first turn did not run now ({exc}); the daemon or run_due will run it"
        return replace(get(rt, view.id), first_turn_note=note)
    view = get(rt, view.id)
    if outcome is None or not outcome.messages:
        return replace(view, first_turn_note=outcome.note if outcome else None)
    outbound = [m for m in transcript(rt, view.id) if m.direction == "outbound"]
    status = next((s for s in _WORST_FIRST if s in {m.status for m in outbound}), "sent")
    errors = "; ".join(sorted({m.last_error for m in outbound if m.last_error}))
    return replace(
        view,
        first_message="\n".join(outcome.messages),
        first_message_status="queued" if status == "sending" else status,
        first_turn_note="; ".join(n for n in (outcome.note, errors) if n) or None,
    )


def prepare(
    rt: Context,
    contact: str,
    objective: str,
    todos: Sequence[str | Mapping[str, Any]],
    *,
    heartbeat: str | timedelta | None = None,
    max_followups: int | None = None,
    channel: str | None = None,
    agent: str | None = None,
    window: str | None = None,
    subject: str | None = None,
    campaign: str | None = None,
    meta: Mapping[str, Any] | None = None,
    result_schema: Mapping[str, Any] | None = None,
    template_sid: str | None = None,
    template_variables: Mapping[str, str] | None = None,
    approval: str | None = None,
    consent: str | None = None,
) -> NewConversation:
    """Check and normalise a new conversation, touching nothing (start and import begin
    here). ``todos``: text, ``"TEXT::KIND"`` or ``{"text", "answer"}``; ``channel``: one, or
    a ladder a,b,c; ``consent``: where and when; ``approval``: see verbs.drafts."""
    from relay.core.approval import parse_mode
    from relay.engine.verbs.program import check_meta, todo_specs

    refuse_empty(heartbeat, channel, agent, window, subject, approval, template_sid)
    channels = ladders.channel_list(channel or rt.config.settings.defaults.channel)
    parsed = address_for(rt, contact, backend_checks.channel_type(rt, channels[0]))
    objective, specs = clean_text(objective, "objective"), todo_specs(todos)
    return NewConversation(
        address=parsed.value,
        objective=objective,
        todos=tuple(clean_text(text, "todo") for text, _ in specs),
        subject=clean_subject(subject) if subject else subject_from_objective(objective),
        heartbeat=_heartbeat(rt, heartbeat),
        max_followups=_max_followups(rt, max_followups),
        channel=channels[0],
        agent=agent or rt.config.settings.agent.backend,
        window=window,
        campaign=clean_campaign(campaign),
        answers=tuple(spec for _, spec in specs),
        meta=check_meta(meta),
        result_schema=checked_result_schema(result_schema),
        template=backend_checks.template(rt, channels[0], template_sid, template_variables),
        contact_fields={"name": parsed.name} if parsed.name else None,
        approval=parse_mode(approval or rt.config.settings.agent.approval),
        channels=channels,
        consent=clean_consent(consent),
    )


def _heartbeat(rt: Context, value: str | timedelta | None) -> timedelta:
    return rt.config.settings.defaults.heartbeat if value is None else as_interval(value)


def create(
    rt: Context, session: Session, spec: NewConversation, now: datetime, actor: str = OPERATOR
) -> Instance:
    """Create the conversation in the caller's transaction (its contact too):
    CREATED, or QUEUED behind the contact's live one."""
    from relay.engine.verbs import privacy

    privacy.refuse_erased(session, rt, spec.address)
    person = contacts.find_or_create(session, address_for(rt, spec.address), now)
    store_contacts.lock(session, person.id)
    if rt.config.settings.compliance.require_consent and not (spec.consent or person.consent):
        raise NoConsent(f"contact {spec.address} has no consent record: give --consent "
                        '"WHERE WHEN" ([compliance] require_consent is on)')  # fmt: skip
    if person.opted_out_at is not None:
        raise OptedOut(
            f"contact {spec.address} has opted out; they must opt in again "
            "(START from them, or `relay contact opt-in`)"
        )
    if person.undeliverable_at is not None:
        raise Undeliverable(
            f"contact {spec.address} is undeliverable ({person.undeliverable_reason}); "
            "`relay contact deliverable` clears it once the address is fixed"
        )
    from relay.engine.conversation import transitions
    from relay.store.models import Todo

    merge_contact_fields(person, spec, now)
    ladders.give_addresses(session, person, spec, now)
    instance = _insert_instance(rt, session, person, spec, now)
    instance.meta = spec.meta or None
    instance.result_schema = spec.result_schema
    session.add_all(
        Todo(
            instance_id=instance.id,
            position=position,
            text=text,
            status=TodoStatus.PENDING.value,
            updated_at=now,
            **answer_columns(spec, position),
        )
        for position, text in enumerate(spec.todos, start=1)
    )
    transitions.record_creation(session, instance.id, instance.state, now, actor)
    if actor == OPERATOR:
        args: dict[str, Any] = {"contact": spec.address, "channel": spec.channel}
        args["agent"] = spec.agent
        args["todo_kinds"] = [answer.text() for answer in spec.answers]
        audit.record(session, "start", instance.id, args, now, actor=rt.who())
    _take_slot(rt, session, instance, now, actor)
    return instance


def _max_followups(rt: Context, value: int | None) -> int:
    default = rt.config.settings.defaults.max_followups
    followups = default if value is None else int(value)
    if not 0 <= followups <= MAX_FOLLOWUPS:
        raise InvalidInput(f"max_followups must be between 0 and {MAX_FOLLOWUPS}")
    return followups


def _insert_instance(
    rt: Context, session: Session, person: Contact, spec: NewConversation, now: datetime
) -> Instance:
    from relay.store.models import Instance

    instance = Instance(
        id=new_instance_id(),
        contact_id=person.id,
        state=INITIAL.value,
        objective=spec.objective,
        subject=spec.subject,
        channel=spec.channel,
        agent=spec.agent,
        window=spec.window or rt.config.settings.defaults.window,
        heartbeat_seconds=int(spec.heartbeat.total_seconds()),
        max_followups=spec.max_followups,
        follow_up_count=0,
        version=0,
        turn_attempts=0,
        campaign=spec.campaign,
        import_key=spec.import_key,
        template=spec.template,
        approval=spec.approval,
        drafts_pending=0,
        ladder=spec.ladder,
        fallback_seconds=spec.fallback_seconds if spec.ladder else None,
        created_at=now,
        updated_at=now,
    )
    session.add(instance)
    session.flush()
    return instance


def _take_slot(
    rt: Context, session: Session, instance: Instance, now: datetime, actor: str
) -> None:
    """Claim the contact's slot, or queue behind its holder.

    The caller holds the contact's lock (:func:`relay.store.contacts.lock`), as does
    every conversation that frees the slot, so what is seen here is what is;
    the unique index stays as the last word.
    """
    from relay.engine.conversation import transitions

    taken = instances.slot_holder(session, instance.contact_id) is not None
    if not taken:
        try:
            with session.begin_nested():
                instance.contact_slot = instance.contact_id
                session.flush()
        except IntegrityError as exc:
            if not queries.is_slot_violation(exc):
                raise
            instance.contact_slot = None
            taken = True
    if taken:
        transitions.apply_event(
            session,
            instance,
            Event.CONTACT_HAS_ACTIVE_INSTANCE,
            now=now,
            actor=actor,
            reason="another conversation with this contact is live",
        )
