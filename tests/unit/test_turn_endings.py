"""Which events end a turn, decided without a database."""

from __future__ import annotations

import pytest

from relay.core.states import Event, State
from relay.core.turn_endings import WAITS, FollowUpCount, TurnEnding, ending
from relay.core.turns import TurnPlan

SAYS = TurnPlan(messages=("Hello",))
SILENT = TurnPlan()
ENDS = TurnPlan(end_reason="all answered")
HANDS_OVER = TurnPlan(messages=("One moment",), intervention_reason="asks for a refund")


@pytest.mark.parametrize(
    ("state", "plan", "replied", "expected"),
    [
        (
            State.CREATED,
            SAYS,
            False,
            TurnEnding(((Event.AGENT_SENDS_FIRST_MESSAGE, None), (Event.MESSAGE_SENT, None))),
        ),
        (
            State.WAITING_FOR_AGENT,
            SILENT,
            True,
            TurnEnding(((Event.AGENT_PROCESSES_REPLY, None), (Event.WAIT_FOR_REPLY, WAITS))),
        ),
        (
            State.WAITING_FOR_AGENT,
            ENDS,
            True,
            TurnEnding(((Event.END_CONVERSATION, "all answered"),)),
        ),
        (
            State.WAITING_FOR_AGENT,
            HANDS_OVER,
            True,
            TurnEnding(((Event.REQUEST_INTERVENTION, "asks for a refund"),)),
        ),
        (
            State.HEARTBEAT_SCHEDULED,
            SAYS,
            False,
            TurnEnding(((Event.FOLLOWUP_SENT, "follow-up 3"),), FollowUpCount.INCREMENT),
        ),
        (
            State.HEARTBEAT_SCHEDULED,
            SAYS,
            True,
            TurnEnding(
                ((Event.FOLLOWUP_SENT, "answered a reply that came before the follow-up"),),
                FollowUpCount.RESET,
            ),
        ),
        (
            State.HEARTBEAT_SCHEDULED,
            SILENT,
            True,
            TurnEnding(((Event.WAIT_FOR_REPLY, WAITS),), FollowUpCount.RESET),
        ),
        (
            State.HEARTBEAT_SCHEDULED,
            ENDS,
            False,
            TurnEnding(((Event.END_CONVERSATION, "all answered"),)),
        ),
    ],
)
def test_the_events_that_end_a_turn(
    state: State, plan: TurnPlan, replied: bool, expected: TurnEnding
) -> None:
    assert ending(state, plan, replied=replied, follow_ups=2) == expected
