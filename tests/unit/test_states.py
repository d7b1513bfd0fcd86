"""The pure state machine: every (state, event) pair, allowed and refused.

The expected table is written out here by hand from the design's table
(docs/architecture.md) plus the documented additions (docs/state-machine.md), not derived from
``relay.core.states.TRANSITIONS``, so a wrong edit of the table fails here.
"""

from __future__ import annotations

import itertools

import pytest

from relay.core.errors import Refused
from relay.core.states import (
    NON_TERMINAL,
    TERMINAL,
    TRANSITIONS,
    Event,
    State,
    allowed_events,
    holds_slot,
    next_state,
    refusal_message,
    validate_table,
)

PRIOR = "prior state"  # PAUSED --resume--> whatever was recorded at pause time

# The operator's verbs and the opt-out, shared by (almost) every non-terminal state.
_PAUSE = {"pause": "PAUSED"}
_CANCEL = {"cancel": "FAILED"}
_OPTED_OUT = {"contact_opted_out": "COMPLETED"}

EXPECTED: dict[str, dict[str, str]] = {
    "CREATED": {
        "agent_sends_first_message": "ACTIVE",
        "contact_has_active_instance": "QUEUED",
        "request_intervention": "NEEDS_HUMAN_INTERVENTION",  # addition
        "unrecoverable_error": "FAILED",  # addition
        **_PAUSE,
        **_CANCEL,
        **_OPTED_OUT,
    },
    "QUEUED": {
        "prior_instance_terminal": "CREATED",
        **_PAUSE,
        **_CANCEL,
    },
    "ACTIVE": {
        "message_sent": "WAITING_FOR_REPLY",
        "wait_for_reply": "WAITING_FOR_REPLY",  # addition
        "end_conversation": "COMPLETED",
        "request_intervention": "NEEDS_HUMAN_INTERVENTION",
        "unrecoverable_error": "FAILED",
        **_PAUSE,
        **_CANCEL,
        **_OPTED_OUT,
    },
    "WAITING_FOR_REPLY": {
        "contact_replies": "WAITING_FOR_AGENT",
        "heartbeat_fires": "HEARTBEAT_SCHEDULED",
        "end_conversation": "COMPLETED",
        "request_intervention": "NEEDS_HUMAN_INTERVENTION",  # addition: delivery failed
        "draft_rejected": "ACTIVE",  # addition: a person rejected the agent's draft
        **_PAUSE,
        **_CANCEL,
        **_OPTED_OUT,
    },
    "WAITING_FOR_AGENT": {
        "agent_processes_reply": "ACTIVE",
        "end_conversation": "COMPLETED",
        "request_intervention": "NEEDS_HUMAN_INTERVENTION",  # addition
        "unrecoverable_error": "FAILED",  # addition
        **_PAUSE,
        **_CANCEL,
        **_OPTED_OUT,
    },
    "HEARTBEAT_SCHEDULED": {
        "followup_sent": "WAITING_FOR_REPLY",
        "wait_for_reply": "WAITING_FOR_REPLY",  # addition
        "max_followups_exceeded": "ABANDONED",
        "end_conversation": "COMPLETED",  # addition
        "request_intervention": "NEEDS_HUMAN_INTERVENTION",  # addition
        "unrecoverable_error": "FAILED",  # addition
        **_PAUSE,
        **_CANCEL,
        **_OPTED_OUT,
    },
    "PAUSED": {
        "resume": PRIOR,
        **_CANCEL,
        **_OPTED_OUT,
    },
    "NEEDS_HUMAN_INTERVENTION": {
        "resume": "ACTIVE",
        "manual_send": "ACTIVE",
        **_PAUSE,
        **_CANCEL,
        **_OPTED_OUT,
    },
    "COMPLETED": {},
    "ABANDONED": {},
    "FAILED": {},
}

ALL_PAIRS = list(itertools.product(State, Event))


def _pair_id(pair: tuple[State, Event]) -> str:
    return f"{pair[0].value}-{pair[1].value}"


def test_expected_table_names_every_state_and_only_real_events() -> None:
    assert set(EXPECTED) == {s.value for s in State}
    events = {e.value for e in Event}
    for state, row in EXPECTED.items():
        assert set(row) <= events, state


def test_table_is_exactly_the_expected_one() -> None:
    actual = {
        state.value: {
            event.value: (PRIOR if state is State.PAUSED and event is Event.RESUME else to.value)
            for event, to in row.items()
        }
        for state, row in TRANSITIONS.items()
    }
    assert actual == EXPECTED


@pytest.mark.parametrize("pair", ALL_PAIRS, ids=[_pair_id(p) for p in ALL_PAIRS])
def test_every_state_event_pair(pair: tuple[State, Event]) -> None:
    state, event = pair
    expected = EXPECTED[state.value].get(event.value)
    if expected is None:
        with pytest.raises(Refused) as refused:
            next_state(state, event, instance_id="r7k2abc")
        message = refused.value.message
        assert "r7k2abc" in message
        assert state.value in message
        assert event.value in message
        for allowed in EXPECTED[state.value]:
            assert allowed in message
        assert refused.value.exit_code == 1
    elif expected == PRIOR:
        assert next_state(state, event, previous=State.ACTIVE) is State.ACTIVE
    else:
        assert next_state(state, event) is State(expected)


@pytest.mark.parametrize("prior", [s for s in NON_TERMINAL if s is not State.PAUSED])
def test_resume_from_paused_returns_the_recorded_prior_state(prior: State) -> None:
    assert next_state(State.PAUSED, Event.RESUME, previous=prior) is prior


@pytest.mark.parametrize("bad_prior", [None, State.PAUSED, *sorted(TERMINAL)])
def test_resume_from_paused_without_a_valid_prior_is_refused(bad_prior: State | None) -> None:
    with pytest.raises(Refused, match="PAUSED"):
        next_state(State.PAUSED, Event.RESUME, previous=bad_prior, instance_id="x1")


def test_needs_human_intervention_resumes_to_active_whatever_was_recorded() -> None:
    for previous in (None, State.WAITING_FOR_REPLY):
        assert next_state(State.NEEDS_HUMAN_INTERVENTION, Event.RESUME, previous=previous) is (
            State.ACTIVE
        )


@pytest.mark.parametrize("terminal", sorted(TERMINAL))
def test_terminal_states_are_absorbing(terminal: State) -> None:
    assert terminal.terminal
    assert allowed_events(terminal) == []
    for event in Event:
        with pytest.raises(Refused, match="none"):
            next_state(terminal, event, previous=State.ACTIVE)


def test_non_terminal_states_are_not_terminal() -> None:
    assert {s for s in State if not s.terminal} == set(NON_TERMINAL)
    assert {s.value for s in TERMINAL} == {"COMPLETED", "ABANDONED", "FAILED"}
    assert len(State) == 11


def test_refusal_message_names_instance_state_event_and_allowed_events() -> None:
    message = refusal_message("r7k2", State.QUEUED, Event.RESUME)
    assert message == (
        "instance r7k2 is QUEUED; resume is not allowed "
        "(allowed: prior_instance_terminal, pause, cancel)"
    )


def test_refusal_message_for_a_terminal_state_says_nothing_is_allowed() -> None:
    message = refusal_message("r7k2", State.FAILED, Event.PAUSE)
    assert "FAILED" in message and "pause" in message and "none" in message


def test_allowed_events_match_the_table_in_order() -> None:
    for state in State:
        assert allowed_events(state) == list(TRANSITIONS[state])
        assert {e.value for e in allowed_events(state)} == set(EXPECTED[state.value])


# -- validate_table -------------------------------------------------------------------


def _copy() -> dict[State, dict[Event, State]]:
    return {state: dict(row) for state, row in TRANSITIONS.items()}


def test_validate_table_accepts_the_real_table() -> None:
    validate_table(TRANSITIONS)


def test_validate_table_catches_a_non_terminal_dead_end() -> None:
    table = _copy()
    table[State.QUEUED] = {}
    with pytest.raises(AssertionError, match="dead end"):
        validate_table(table)


def test_validate_table_catches_an_unreachable_state() -> None:
    table = _copy()
    for row in table.values():
        for event in [e for e, to in row.items() if to is State.ABANDONED]:
            del row[event]
    with pytest.raises(AssertionError, match=r"unreachable.*ABANDONED"):
        validate_table(table)


def test_validate_table_catches_a_terminal_state_that_is_not_absorbing() -> None:
    table = _copy()
    table[State.COMPLETED] = {Event.RESUME: State.ACTIVE}
    with pytest.raises(AssertionError, match="absorbing"):
        validate_table(table)


def test_validate_table_catches_a_missing_state() -> None:
    table = _copy()
    del table[State.HEARTBEAT_SCHEDULED]
    with pytest.raises(AssertionError, match="every state"):
        validate_table(table)


# -- holds_slot ------------------------------------------------------------------------

SLOT_CASES = [
    (State.CREATED, None, True),
    (State.QUEUED, None, False),
    (State.ACTIVE, None, True),
    (State.WAITING_FOR_REPLY, None, True),
    (State.WAITING_FOR_AGENT, None, True),
    (State.HEARTBEAT_SCHEDULED, None, True),
    (State.NEEDS_HUMAN_INTERVENTION, None, True),
    (State.PAUSED, State.CREATED, True),
    (State.PAUSED, State.ACTIVE, True),
    (State.PAUSED, State.WAITING_FOR_REPLY, True),
    (State.PAUSED, State.NEEDS_HUMAN_INTERVENTION, True),
    (State.PAUSED, State.QUEUED, False),
    (State.COMPLETED, None, False),
    (State.ABANDONED, None, False),
    (State.FAILED, None, False),
    (State.FAILED, State.ACTIVE, False),
]


@pytest.mark.parametrize(("state", "previous", "holds"), SLOT_CASES)
def test_holds_slot(state: State, previous: State | None, holds: bool) -> None:
    assert holds_slot(state, previous) is holds


def test_enum_values_render_as_plain_strings() -> None:
    assert str(State.WAITING_FOR_REPLY) == "WAITING_FOR_REPLY"
    assert str(Event.CONTACT_REPLIES) == "contact_replies"
    assert f"{State.PAUSED}" == "PAUSED"
