"""Which events end a turn: a pure decision from the state the turn ran in and what
the agent decided (:class:`relay.core.turns.TurnPlan`).

The engine applies the events in order, each through the state machine, in the
turn's commit (:mod:`relay.engine.turns.commit`); the last one says where the
conversation stands. Here, and only here, is the order written down.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from relay.core.states import Event, State
from relay.core.turns import TurnPlan

WAITS = "the agent chose to wait"
#: The event a turn's result begins with, by the state the turn ran in.
_OPENING = {
    State.CREATED: Event.AGENT_SENDS_FIRST_MESSAGE,
    State.WAITING_FOR_AGENT: Event.AGENT_PROCESSES_REPLY,
}


class FollowUpCount(StrEnum):
    """What a follow-up turn does to the count of follow-ups without an answer."""

    KEEP = "keep"
    #: The contact wrote after the heartbeat fired: the silence being counted is over.
    RESET = "reset"
    INCREMENT = "increment"


@dataclass(frozen=True)
class TurnEnding:
    events: tuple[tuple[Event, str | None], ...]
    count: FollowUpCount = FollowUpCount.KEEP


def ending(state: State, plan: TurnPlan, *, replied: bool, follow_ups: int) -> TurnEnding:
    """The events, in order, that take a conversation from ``state`` to where the
    turn leaves it (always somewhere live or terminal). ``replied``: the turn
    answered inbound messages; ``follow_ups``: the count before this turn."""
    if plan.intervention_reason:
        return TurnEnding(((Event.REQUEST_INTERVENTION, plan.intervention_reason),))
    if state is State.HEARTBEAT_SCHEDULED:
        return _after_follow_up(plan, replied=replied, follow_ups=follow_ups)
    if state is State.WAITING_FOR_AGENT and plan.end_reason and not plan.messages:
        return TurnEnding(((Event.END_CONVERSATION, plan.end_reason),))
    opening = _OPENING.get(state)
    events: tuple[tuple[Event, str | None], ...] = ((opening, None),) if opening else ()
    if plan.end_reason:
        return TurnEnding((*events, (Event.END_CONVERSATION, plan.end_reason)))
    if plan.messages:
        return TurnEnding((*events, (Event.MESSAGE_SENT, None)))
    return TurnEnding((*events, (Event.WAIT_FOR_REPLY, WAITS)))


def _after_follow_up(plan: TurnPlan, *, replied: bool, follow_ups: int) -> TurnEnding:
    if plan.end_reason:
        return TurnEnding(((Event.END_CONVERSATION, plan.end_reason),))
    if replied:
        if plan.messages:
            answered = "answered a reply that came before the follow-up"
            return TurnEnding(((Event.FOLLOWUP_SENT, answered),), FollowUpCount.RESET)
        return TurnEnding(((Event.WAIT_FOR_REPLY, WAITS),), FollowUpCount.RESET)
    if plan.messages:
        reason = f"follow-up {follow_ups + 1}"
        return TurnEnding(((Event.FOLLOWUP_SENT, reason),), FollowUpCount.INCREMENT)
    return TurnEnding(((Event.WAIT_FOR_REPLY, WAITS),))
