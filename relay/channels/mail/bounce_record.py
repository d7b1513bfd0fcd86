"""What a bounce says, as the bounce readers (DSN, plain text, SES) return it."""

from __future__ import annotations

from dataclasses import dataclass, field

from relay.core.bounce_reasons import BounceReason


@dataclass(frozen=True)
class Bounce:
    """What a bounce says: the message it is about, why, for whom, and whether for good."""

    original_message_id: str | None
    #: The address is dead (its reason is user or host unknown): mark it undeliverable.
    permanent: bool
    error: str
    #: A "still trying" warning (Action: delayed, or a plain-text delay notice), not a failure.
    delayed: bool = False
    #: A success report (Action: delivered/relayed/expanded), asked for by NOTIFY=SUCCESS.
    delivered: bool = False
    reason: BounceReason = BounceReason.OTHER
    recipients: tuple[str, ...] = field(default=())
    status: str | None = None

    @property
    def failed(self) -> bool:
        """A real failure (not a delay warning, not a success report)."""
        return not (self.delayed or self.delivered)
