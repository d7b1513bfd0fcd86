"""How a refusal reads to whoever drives relay, and what kind of failure an error is.

The CLI prints these lines on stderr and MCP returns them as tool errors: one
wording, two front ends. Standard library only, so both (and the cold CLI path)
can use it.
"""

from __future__ import annotations

from typing import Any

from relay.core.errors import (
    Ambiguous,
    ConfigError,
    Conflict,
    NotFound,
    OptedOut,
    Refused,
    RelayError,
    SchemaOutOfDate,
    Undeliverable,
)

#: The command an operator types for each event the state machine takes from the CLI
#: (and what follows the instance id).
VERBS = {
    "pause": ("relay pause", ""),
    "resume": ("relay resume", ""),
    "cancel": ("relay cancel", ""),
    "manual_send": ("relay send", ' "TEXT"'),
}

#: The kinds a program can act on: fix the call (invalid, not_found), do something
#: else (refused), fix the setup (config), or try again later (unavailable).
KINDS = ("refused", "not_found", "invalid", "config", "unavailable")


def refusal(exc: Any) -> str:
    """A refusal in the operator's terms: what was asked, why not, and the
    commands that would work (internal events have no command and are left out)."""
    instance_id, state_name, event = exc.instance_id, exc.state, exc.event
    if not (instance_id and state_name and event):
        return str(exc.message)
    asked = f"`{VERBS[event][0]}`" if event in VERBS else event
    head = f"instance {instance_id} is {state_name}; {asked} does not apply"
    works = [f"`{command}`" for command in commands_that_work(exc)]
    if works:
        return f"{head}; what works now: {', '.join(works)}"
    if not exc.allowed:
        return f"{head}: the conversation has ended (`relay show {instance_id}` says why)"
    return f"{head}; nothing an operator does applies now"


def commands_that_work(exc: Any) -> list[str]:
    """The operator commands the refused instance's state allows, in full."""
    if not isinstance(exc, Refused) or not exc.instance_id:
        return []
    return [f"{VERBS[e][0]} {exc.instance_id}{VERBS[e][1]}" for e in exc.allowed if e in VERBS]


def message_of(exc: RelayError) -> str:
    """The one line the CLI prints after ``relay: error:``."""
    return refusal(exc) if isinstance(exc, Refused) else exc.message


def database_line(exc: BaseException) -> str:
    """A database failure as one line: ``database error: <the driver's first line>``
    (no SQL, no traceback)."""
    detail = str(getattr(exc, "orig", None) or exc).strip()
    return f"database error: {detail.splitlines()[0] if detail else type(exc).__name__}"


def kind_of(exc: RelayError) -> str:
    """One of :data:`KINDS` for a relay error."""
    if isinstance(exc, Conflict):
        return "unavailable"  # the instance moved meanwhile: the same call may work next time
    if isinstance(exc, Refused | OptedOut | Undeliverable):
        return "refused"
    if isinstance(exc, NotFound):
        return "not_found"
    if isinstance(exc, ConfigError | SchemaOutOfDate):
        return "config"
    if isinstance(exc, Ambiguous):
        return "invalid"
    return "invalid"
