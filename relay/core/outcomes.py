"""How a conversation counts in the funnel (``relay stats``): its outcome.

The outcome is kept on the instance row (``instances.outcome``), written by the
transition that decides it, so the funnel counts outcomes from an index instead
of re-deriving them from states, reasons and todos for every conversation.
Outcomes are exclusive; a live conversation has none (NULL), except that one
waiting on a person counts as ``needs_human`` while it waits.
"""

from __future__ import annotations

from datetime import datetime

from relay.core.states import State

#: ``end_reason`` / ``failure_reason`` of a conversation the contact opted out of.
OPTED_OUT = "opted_out"
#: Every outcome, in the funnel's order; "live" is the absence of one.
OUTCOMES = (
    "completed",
    "ended_early",
    "opted_out",
    "abandoned",
    "failed",
    "needs_human",
    "live",
)
_TERMINAL = {State.ABANDONED: "abandoned", State.FAILED: "failed"}


def outcome_of(state: State, reason: str | None, *, answers_missing: bool = False) -> str | None:
    """The outcome of a conversation that has just entered ``state`` for
    ``reason``: ``answers_missing`` says whether a required todo is still open
    (asked only when it ends COMPLETED). None means still live."""
    if state.terminal and reason == OPTED_OUT:
        return "opted_out"
    if state is State.COMPLETED:
        return "ended_early" if answers_missing else "completed"
    if state is State.NEEDS_HUMAN_INTERVENTION:
        return "needs_human"
    return _TERMINAL.get(state)


def reply_delay(delivered: datetime | None, replied: datetime | None) -> float | None:
    """Seconds from the first delivery to the first reply; None without both, or
    when the reply came first (it answered nothing relay had delivered)."""
    if delivered is None or replied is None or replied < delivered:
        return None
    return (replied - delivered).total_seconds()
