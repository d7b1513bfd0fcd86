"""``relay doctor``: check the store against the invariants of docs/architecture.md.

The engine keeps these invariants by construction; the doctor is for the
cases it cannot see (a hand-edited database, a bug, a restore from backup).
Each finding names the instance and the rule it breaks.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from relay.core.clock import isoformat
from relay.core.states import HEARTBEAT_STATES, PAUSED_STATES, QUEUED_STATE, State, holds_slot
from relay.engine.conversation import transitions
from relay.store import arrivals, doubts, health, pushes
from relay.store import instances as store_instances
from relay.store.models import Instance

log = logging.getLogger("relay.doctor")

if TYPE_CHECKING:
    from relay.engine.runtime import Runtime


@dataclass(frozen=True)
class Finding:
    subject: str
    problem: str

    def to_json(self) -> dict[str, str]:
        return {"subject": self.subject, "problem": self.problem}


def examine(relay: Runtime) -> list[Finding]:
    with relay.store.transaction() as session:
        instances = health.all_instances(session)
        findings = _instance_findings(session, instances)
        findings += _slot_findings(instances)
        findings += _outbox_findings(session)
    return findings + _backend_findings(relay)


#: A push older than this is waiting for a daemon that is not running (one takes
#: what ``relay serve`` stored within a pulse or two).
PUSH_WAIT = timedelta(minutes=2)


def notices(relay: Runtime) -> list[Finding]:
    """What needs a person's eye but breaks no rule: replies after a conversation
    ended, inbound from no usable address (``relay inbox`` lists them), webhooks
    ``relay serve`` stored that no daemon has taken in."""
    with relay.store.read_transaction() as session:
        findings = _inbound_findings(session) + _fate_findings(session)
        count, oldest = pushes.backlog(session)
    if oldest is not None and relay.now() - oldest > PUSH_WAIT:
        findings.append(
            Finding(
                "inbound",
                f"{count} webhook(s) stored by relay serve wait for a daemon (the oldest "
                f"since {isoformat(oldest)}): run relay daemon, or relay tick",
            )
        )
    return findings


def _fate_findings(session: Session) -> list[Finding]:
    """Messages a crash left in the channel's hands, whose channel cannot tell whether
    they went (:mod:`relay.engine.outbox.doubts`): a person decides."""
    return [
        Finding(
            f"message {row.id}",
            f"to {row.address} on {row.channel or 'console'} ({row.instance_id or '-'}), "
            f"written {isoformat(row.created_at)}: {row.last_error or 'fate unknown'}; "
            f"check with the provider, then `relay retry {row.id}` sends it again "
            "(`[outbox] resend_unknown = true` does so for every such message)",
        )
        for row in doubts.unknown_fates(session)
    ]


def repair(relay: Runtime, *, actor: str = "doctor") -> list[Finding]:
    """Fix what can be fixed safely, each fix in the transition log: a queue left
    waiting with nobody holding the contact's slot gets its oldest conversation
    promoted (what the conversation that ended should have done)."""
    fixed = []
    with relay.store.transaction() as session:
        now = relay.now()
        for contact_id in store_instances.stranded_queues(session):
            promoted = transitions.promote_next(
                session,
                contact_id,
                now=now,
                actor=actor,
                reason="repair: queued with no live conversation for the contact",
            )
            if promoted is not None:
                fixed.append(Finding(promoted.id, "promoted: it was queued behind nobody"))
                log.warning(
                    "instance %s was queued behind nobody; promoted",
                    promoted.id,
                    extra={"instance_id": promoted.id},
                )
    return fixed


def _inbound_findings(session: Session) -> list[Finding]:
    late, rejected = arrivals.inbound_trouble(session)
    findings = []
    if late:
        findings.append(
            Finding("inbound", f"{late} message(s) arrived after their conversation ended")
        )
    if rejected:
        findings.append(
            Finding("inbound", f"{rejected} message(s) kept aside: the sender is no address")
        )
    return findings


def _backend_findings(relay: Runtime) -> list[Finding]:
    """Channels and the default agent that could not work (a missing secret)."""
    from relay.engine.runtime import agent_problems_of, channel_names, channel_problems_of

    config = relay.config
    findings = [
        Finding(f"channel {name}", problem)
        for name in channel_names(config)
        for problem in channel_problems_of(config, name)
    ]
    agent = config.settings.agent.backend
    findings += [Finding(f"agent {agent}", p) for p in agent_problems_of(config, agent)]
    if config.settings.intent.enabled and agent != "openai":  # [intent] asks its server
        findings += [Finding("intent", p) for p in agent_problems_of(config, "openai")]
    return findings


def _instance_findings(session: Session, instances: list[Instance]) -> list[Finding]:
    last_rows = health.logged_states(session)
    findings = []
    for inst in instances:
        state = State(inst.state)
        if (state in PAUSED_STATES) != (inst.previous_state is not None):
            findings.append(Finding(inst.id, "PAUSED must go with a recorded prior state"))
        if inst.next_heartbeat_at is not None and state not in HEARTBEAT_STATES:
            findings.append(Finding(inst.id, f"heartbeat pending while {state.value}"))
        if last_rows.get(inst.id) != inst.state:
            findings.append(
                Finding(inst.id, f"state {inst.state} has no matching transition-log row")
            )
        previous = State(inst.previous_state) if inst.previous_state else None
        holding = holds_slot(state, previous)
        if holding != (inst.contact_slot is not None):
            findings.append(Finding(inst.id, "contact slot does not match the state"))
    return findings


def _slot_findings(instances: list[Instance]) -> list[Finding]:
    holders: dict[int, list[str]] = defaultdict(list)
    queued: dict[int, list[str]] = defaultdict(list)
    for inst in instances:
        if inst.contact_slot is not None:
            holders[inst.contact_id].append(inst.id)
        if inst.state == QUEUED_STATE.value:
            queued[inst.contact_id].append(inst.id)
    findings = []
    for contact_id, ids in holders.items():
        if len(ids) > 1:
            findings.append(Finding(f"contact {contact_id}", f"several slot holders: {ids}"))
    for contact_id, ids in queued.items():
        if not holders.get(contact_id):
            findings.append(Finding(ids[0], "QUEUED although no instance holds the contact's slot"))
    return findings


def _outbox_findings(session: Session) -> list[Finding]:
    rows = health.queued_for_opted_out(session)
    return [
        Finding(f"message {mid}", f"queued for {address}, who opted out") for mid, address in rows
    ]
