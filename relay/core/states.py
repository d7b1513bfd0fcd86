"""The conversation state machine as data, and the one function that applies it.

Everything that changes an instance's state goes through :func:`next_state`;
nothing else re-implements the table. The table is validated when this module
is imported (every state reachable, no non-terminal dead end, terminal states
absorbing), so a bad edit fails at import rather than in production.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from functools import cache

from relay.core.errors import Refused


class State(StrEnum):
    CREATED = "CREATED"
    QUEUED = "QUEUED"
    ACTIVE = "ACTIVE"
    WAITING_FOR_REPLY = "WAITING_FOR_REPLY"
    WAITING_FOR_AGENT = "WAITING_FOR_AGENT"
    HEARTBEAT_SCHEDULED = "HEARTBEAT_SCHEDULED"
    PAUSED = "PAUSED"
    NEEDS_HUMAN_INTERVENTION = "NEEDS_HUMAN_INTERVENTION"
    COMPLETED = "COMPLETED"
    ABANDONED = "ABANDONED"
    FAILED = "FAILED"

    def __str__(self) -> str:
        return self.value

    @property
    def terminal(self) -> bool:
        return self in TERMINAL


class Event(StrEnum):
    AGENT_SENDS_FIRST_MESSAGE = "agent_sends_first_message"
    CONTACT_HAS_ACTIVE_INSTANCE = "contact_has_active_instance"
    PRIOR_INSTANCE_TERMINAL = "prior_instance_terminal"
    MESSAGE_SENT = "message_sent"
    WAIT_FOR_REPLY = "wait_for_reply"
    END_CONVERSATION = "end_conversation"
    REQUEST_INTERVENTION = "request_intervention"
    UNRECOVERABLE_ERROR = "unrecoverable_error"
    CONTACT_REPLIES = "contact_replies"
    HEARTBEAT_FIRES = "heartbeat_fires"
    AGENT_PROCESSES_REPLY = "agent_processes_reply"
    FOLLOWUP_SENT = "followup_sent"
    MAX_FOLLOWUPS_EXCEEDED = "max_followups_exceeded"
    CONTACT_OPTED_OUT = "contact_opted_out"
    RESUME = "resume"
    MANUAL_SEND = "manual_send"
    PAUSE = "pause"
    CANCEL = "cancel"
    DRAFT_REJECTED = "draft_rejected"

    def __str__(self) -> str:
        return self.value


S, E = State, Event

TERMINAL: frozenset[State] = frozenset({S.COMPLETED, S.ABANDONED, S.FAILED})

#: The order a conversation goes through its states (the enum's order): created or
#: queued, the exchange, the holds (paused, a person), then the endings. ``relay
#: status`` and ``relay watch`` sort by it.
LIFECYCLE: tuple[State, ...] = tuple(State)
NON_TERMINAL: tuple[State, ...] = tuple(s for s in State if s not in TERMINAL)

# Rows of the design's table (docs/architecture.md), plus the events that close its gaps (marked +).
# An agent turn may end, fail or ask for help from whichever state it started
# in, so those outcomes exist for CREATED, WAITING_FOR_AGENT and
# HEARTBEAT_SCHEDULED too; docs/state-machine.md explains each addition.
_BASE: dict[State, dict[Event, State]] = {
    S.CREATED: {
        E.AGENT_SENDS_FIRST_MESSAGE: S.ACTIVE,
        E.CONTACT_HAS_ACTIVE_INSTANCE: S.QUEUED,
        E.REQUEST_INTERVENTION: S.NEEDS_HUMAN_INTERVENTION,  # +
        E.UNRECOVERABLE_ERROR: S.FAILED,  # +
    },
    S.QUEUED: {
        E.PRIOR_INSTANCE_TERMINAL: S.CREATED,
    },
    S.ACTIVE: {
        E.MESSAGE_SENT: S.WAITING_FOR_REPLY,
        E.WAIT_FOR_REPLY: S.WAITING_FOR_REPLY,  # +
        E.END_CONVERSATION: S.COMPLETED,
        E.REQUEST_INTERVENTION: S.NEEDS_HUMAN_INTERVENTION,
        E.UNRECOVERABLE_ERROR: S.FAILED,
    },
    S.WAITING_FOR_REPLY: {
        E.CONTACT_REPLIES: S.WAITING_FOR_AGENT,
        E.HEARTBEAT_FIRES: S.HEARTBEAT_SCHEDULED,
        E.END_CONVERSATION: S.COMPLETED,
        E.REQUEST_INTERVENTION: S.NEEDS_HUMAN_INTERVENTION,  # + a delivery failed for good
        E.DRAFT_REJECTED: S.ACTIVE,  # + a person rejected the draft: the agent writes again
    },
    S.WAITING_FOR_AGENT: {
        E.AGENT_PROCESSES_REPLY: S.ACTIVE,
        E.END_CONVERSATION: S.COMPLETED,
        E.REQUEST_INTERVENTION: S.NEEDS_HUMAN_INTERVENTION,  # +
        E.UNRECOVERABLE_ERROR: S.FAILED,  # +
    },
    S.HEARTBEAT_SCHEDULED: {
        E.FOLLOWUP_SENT: S.WAITING_FOR_REPLY,
        E.WAIT_FOR_REPLY: S.WAITING_FOR_REPLY,  # +
        E.MAX_FOLLOWUPS_EXCEEDED: S.ABANDONED,
        E.END_CONVERSATION: S.COMPLETED,  # +
        E.REQUEST_INTERVENTION: S.NEEDS_HUMAN_INTERVENTION,  # +
        E.UNRECOVERABLE_ERROR: S.FAILED,  # +
    },
    S.PAUSED: {},
    S.NEEDS_HUMAN_INTERVENTION: {
        E.RESUME: S.ACTIVE,
        E.MANUAL_SEND: S.ACTIVE,
    },
    S.COMPLETED: {},
    S.ABANDONED: {},
    S.FAILED: {},
}


def _build() -> dict[State, dict[Event, State]]:
    table = {state: dict(events) for state, events in _BASE.items()}
    for state in NON_TERMINAL:
        # The operator's verbs and the opt-out apply everywhere they make sense.
        if state is not S.PAUSED:
            table[state][E.PAUSE] = S.PAUSED
        table[state][E.CANCEL] = S.FAILED
        if state is not S.QUEUED:
            table[state][E.CONTACT_OPTED_OUT] = S.COMPLETED
    # PAUSED -> resume goes to the recorded prior state; PAUSED stands in here
    # as a placeholder that next_state() resolves.
    table[S.PAUSED][E.RESUME] = S.PAUSED
    return table


TRANSITIONS: Mapping[State, Mapping[Event, State]] = _build()


class TurnReason(StrEnum):
    FIRST_MESSAGE = "first_message"
    REPLY = "reply"
    FOLLOW_UP = "follow_up"
    RESUME = "resume"

    def __str__(self) -> str:
        return self.value


#: The states in which an agent turn is due, and what the turn is for. Every
#: other live state waits for something else (a reply, a person, a resume).
#: Here, beside the table, rather than with the turn's data (``relay.core.turns``):
#: the read commands count due turns and need no more of a turn than this.
TURN_REASONS: dict[State, TurnReason] = {
    S.CREATED: TurnReason.FIRST_MESSAGE,
    S.WAITING_FOR_AGENT: TurnReason.REPLY,
    S.HEARTBEAT_SCHEDULED: TurnReason.FOLLOW_UP,
    S.ACTIVE: TurnReason.RESUME,
}
TURN_STATES: frozenset[State] = frozenset(TURN_REASONS)


# -- What each state means beyond its transitions ---------------------------------------
# Every other module reads these sets (and the functions below) instead of naming
# states: "a heartbeat runs only in WAITING_FOR_REPLY" is written here once.

# Where a fact holds in exactly one state, that state is also named by the fact
# (``HEARTBEAT_STATE``), so that a store query compares with one value, as before.

#: The state every conversation starts in.
INITIAL: State = S.CREATED
#: Ended: no event leaves these (alias of TERMINAL, for readers of the facts below).
ENDED: frozenset[State] = TERMINAL
#: Ended having done what it set out to do (a result is expected to be complete).
SUCCESS_STATE: State = S.COMPLETED
SUCCEEDED: frozenset[State] = frozenset({SUCCESS_STATE})
#: Ended by a failure: its reason is recorded as the failure reason.
FAILED_STATES: frozenset[State] = frozenset({S.FAILED})
#: Where the heartbeat runs: the countdown to the next follow-up is pending only
#: here (``next_heartbeat_at``). Entering it starts it, leaving it stops it; a
#: pause keeps what was left of it (:func:`entering`, :func:`leaving`).
HEARTBEAT_STATE: State = S.WAITING_FOR_REPLY
HEARTBEAT_STATES: frozenset[State] = frozenset({HEARTBEAT_STATE})
#: Where a contact's reply is taken at once (``contact_replies``). Anywhere else a
#: reply waits, unprocessed, and is taken on entering one of these states.
TAKES_REPLIES: frozenset[State] = frozenset({S.WAITING_FOR_REPLY})
#: Waiting behind the contact's live conversation.
QUEUED_STATE: State = S.QUEUED
QUEUED_STATES: frozenset[State] = frozenset({QUEUED_STATE})
#: Put on hold by the operator (or a contact's "not before"): the prior state is
#: recorded on entering and resumed later.
PAUSED_STATE: State = S.PAUSED
PAUSED_STATES: frozenset[State] = frozenset({PAUSED_STATE})
#: Waiting for a person (the operator) to act.
NEEDS_PERSON_STATE: State = S.NEEDS_HUMAN_INTERVENTION
NEEDS_PERSON: frozenset[State] = frozenset({NEEDS_PERSON_STATE})
#: Live states whose outbox messages are held, neither delivered nor cancelled.
HOLDS_DELIVERY: frozenset[State] = PAUSED_STATES | QUEUED_STATES
#: Ended states whose queued messages are still delivered (a completed
#: conversation's farewell); any other ended state cancels them.
DELIVERS_AFTER_END: frozenset[State] = SUCCEEDED


#: How the read commands group states (``relay list`` colours a family alike).
FAMILIES: dict[str, frozenset[State]] = {
    "live": frozenset({S.CREATED, S.ACTIVE, S.WAITING_FOR_AGENT}),
    "waiting": frozenset({S.QUEUED, S.WAITING_FOR_REPLY, S.HEARTBEAT_SCHEDULED}),
    "needs you": NEEDS_PERSON | PAUSED_STATES,
    "done": frozenset({S.COMPLETED, S.ABANDONED}),
    "failed": FAILED_STATES,
}


@cache
def values(states: frozenset[State]) -> frozenset[str]:
    """The states' names, for comparing with a view's or a row's ``state`` text."""
    return frozenset(s.value for s in states)


def delivers(state: State) -> bool | None:
    """Whether an outbox message of a conversation in ``state`` goes: True (deliver),
    None (hold it for later), False (cancel it: the conversation ended)."""
    if state in HOLDS_DELIVERY:
        return None
    return not state.terminal or state in DELIVERS_AFTER_END


class Effect(StrEnum):
    """What a transition does to the row besides setting the state, by the states
    it leaves and enters (``relay.engine.conversation.transitions`` carries them out)."""

    START_HEARTBEAT = "start_heartbeat"  # the countdown to a follow-up starts
    STOP_HEARTBEAT = "stop_heartbeat"  # it stops (a pause keeps the time left)
    TAKE_WAITING_REPLY = "take_waiting_reply"  # a reply that waited is taken now
    RECORD_PRIOR_STATE = "record_prior_state"  # the pause remembers where to resume
    END_PAUSE = "end_pause"  # the prior state and the pause's deadline are forgotten
    END = "end"  # ended_at and the reason are set; no heartbeat any more


def _entering(state: State) -> frozenset[Effect]:
    effects = set()
    if state in HEARTBEAT_STATES:
        effects.add(Effect.START_HEARTBEAT)
    if state in TAKES_REPLIES:
        effects.add(Effect.TAKE_WAITING_REPLY)
    if state in PAUSED_STATES:
        effects.add(Effect.RECORD_PRIOR_STATE)
    if state.terminal:
        effects.add(Effect.END)
    return frozenset(effects)


def _leaving(state: State) -> frozenset[Effect]:
    effects = set()
    if state in HEARTBEAT_STATES:
        effects.add(Effect.STOP_HEARTBEAT)
    if state in PAUSED_STATES:
        effects.add(Effect.END_PAUSE)
    return frozenset(effects)


# Worked out once: a transition asks them a few times, on the daemon's hot path.
_ENTERING: Mapping[State, frozenset[Effect]] = {s: _entering(s) for s in State}
_LEAVING: Mapping[State, frozenset[Effect]] = {s: _leaving(s) for s in State}


def entering(state: State) -> frozenset[Effect]:
    """What entering ``state`` (from another state) does."""
    return _ENTERING[state]


def leaving(state: State) -> frozenset[Effect]:
    """What leaving ``state`` (for another state) does."""
    return _LEAVING[state]


def allowed_events(state: State) -> list[Event]:
    """Events accepted in ``state``, in table order (used in refusal messages)."""
    return list(TRANSITIONS[state])


def next_state(
    state: State,
    event: Event,
    *,
    previous: State | None = None,
    instance_id: str = "instance",
) -> State:
    """Return the state ``event`` leads to from ``state``, or raise :class:`Refused`.

    ``previous`` is the prior state recorded when the instance was paused;
    resuming a PAUSED instance returns it.
    """
    target = TRANSITIONS[state].get(event)
    if target is None:
        raise Refused(
            refusal_message(instance_id, state, event),
            instance_id=instance_id,
            state=state.value,
            event=event.value,
            allowed=tuple(e.value for e in allowed_events(state)),
        )
    if state is S.PAUSED and event is E.RESUME:
        if previous is None or previous is S.PAUSED or previous.terminal:
            raise Refused(f"instance {instance_id} is PAUSED with no valid prior state recorded")
        return previous
    return target


def refusal_message(instance_id: str, state: State, event: Event) -> str:
    allowed = ", ".join(e.value for e in allowed_events(state)) or "none (terminal state)"
    return (
        f"instance {instance_id} is {state.value}; {event.value} is not allowed "
        f"(allowed: {allowed})"
    )


def holds_slot(state: State, previous: State | None) -> bool:
    """Whether an instance in ``state`` occupies its contact's one live slot: any live
    state but a queued one (or one paused while queued)."""
    return not state.terminal and not waits_in_queue(state, previous)


def waits_in_queue(state: State, previous: State | None) -> bool:
    """QUEUED, or paused while QUEUED: behind the contact's live conversation."""
    return state in QUEUED_STATES or (state in PAUSED_STATES and previous in QUEUED_STATES)


#: The live states that hold the contact's slot (whatever the prior state of a pause).
SLOT_STATES: frozenset[State] = frozenset(s for s in NON_TERMINAL if s not in QUEUED_STATES)
#: Where an undeliverable message moves a conversation with a channel ladder
#: (:mod:`relay.core.ladder`) to its next channel instead of to a person: while it
#: holds the contact's slot. An ended one (a completed conversation's farewell) stays.
LADDER_STATES: frozenset[State] = SLOT_STATES


def _reachable(table: Mapping[State, Mapping[Event, State]], start: State) -> set[State]:
    reached = {start}
    frontier = [start]
    while frontier:
        for target in table[frontier.pop()].values():
            if target not in reached:
                reached.add(target)
                frontier.append(target)
    return reached


def validate_table(table: Mapping[State, Mapping[Event, State]]) -> None:
    """Check the machine's shape: complete, reachable, no dead ends, terminals absorbing."""
    if set(table) != set(State):
        raise AssertionError("transition table must list every state")
    for state in TERMINAL:
        if table[state]:
            raise AssertionError(f"terminal state {state} must be absorbing")
    for state in NON_TERMINAL:
        if not table[state]:
            raise AssertionError(f"non-terminal state {state} is a dead end")
    reached = _reachable(table, S.CREATED)
    if reached != set(State):
        missing = sorted(s.value for s in set(State) - reached)
        raise AssertionError(f"unreachable states: {missing}")


validate_table(TRANSITIONS)
if any(s.terminal or s in HOLDS_DELIVERY for s in TURN_STATES):
    raise AssertionError("a turn is due only in a live state that holds the contact's slot")
if not HEARTBEAT_STATES <= SLOT_STATES - TURN_STATES or not TAKES_REPLIES <= SLOT_STATES:
    raise AssertionError("a heartbeat runs and a reply is taken only while waiting for the contact")
if sorted(s for family in FAMILIES.values() for s in family) != sorted(State):
    raise AssertionError("every state is in exactly one family")


#: Names for a narrow column that still tell every state apart (states not named
#: here are short already); ``relay watch`` uses them below full width.
SHORT_NAMES: dict[str, str] = {
    State.WAITING_FOR_REPLY.value: "WAIT REPLY",
    State.WAITING_FOR_AGENT.value: "WAIT AGENT",
    State.HEARTBEAT_SCHEDULED.value: "HEARTBEAT",
    State.NEEDS_HUMAN_INTERVENTION.value: "NEEDS HUMAN",
}
