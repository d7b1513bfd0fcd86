"""One error root for relay, so the CLI can map any failure to a message and an exit code.

A subclass's docstring is its default message; raising with an argument
overrides it. ``exit_code`` is what the CLI exits with: 1 when the state
machine refused, 2 for usage, not-found, bad input and configuration.
"""

from __future__ import annotations


class RelayError(Exception):
    """relay failed."""

    exit_code: int = 2

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip().splitlines()[0])

    @property
    def message(self) -> str:
        return str(self.args[0])


class InvalidInput(RelayError):
    """The input is not valid."""


class NotFound(RelayError):
    """Nothing matches."""


class Ambiguous(RelayError):
    """More than one thing matches."""


class ConfigError(RelayError):
    """The configuration is not valid."""


class SchemaOutOfDate(RelayError):
    """The database schema is behind this version of relay; run `relay db upgrade`."""


class OptedOut(RelayError):
    """The contact has opted out of messages."""


class Erased(OptedOut):
    """The contact was erased: relay never contacts the address again."""


class NoConsent(RelayError):
    """The contact has no consent record and ``[compliance] require_consent`` is on."""


class Undeliverable(RelayError):
    """The contact's address cannot be reached (a hard bounce, an unknown number)."""


class Refused(RelayError):
    """The state machine refused the event.

    ``instance_id``, ``state``, ``event`` and ``allowed`` (event names) say what
    was refused and what would have worked, so a caller (the CLI) can word it
    in its own terms; the message stays complete without them.
    """

    exit_code = 1

    def __init__(
        self,
        message: str | None = None,
        *,
        instance_id: str | None = None,
        state: str | None = None,
        event: str | None = None,
        allowed: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        #: The instance's state, the refused event and the events that state allows:
        #: a caller can word its own refusal ("try relay resume") from these.
        self.instance_id = instance_id
        self.state = state
        self.event = event
        self.allowed = allowed


class Conflict(RelayError):
    """The instance changed while the work was in progress."""

    exit_code = 1
