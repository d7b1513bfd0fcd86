"""What ``relay contact show`` says of an undeliverable mark (kept apart from views.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from relay.core.clock import isoformat


@dataclass(frozen=True)
class UndeliverableMark:
    """Why nothing more is sent to a contact: the reason, and the bounce that set it."""

    at: datetime
    reason: str | None
    #: The classified reason of the bounce (user_unknown, ...), None for other marks.
    bounce_reason: str | None = None
    #: The outbound message that bounced (None when not recorded or since pruned).
    message_id: int | None = None
    instance_id: str | None = None
    bounced_at: datetime | None = None
    error: str | None = None

    def bounce_json(self) -> dict[str, Any] | None:
        if self.bounce_reason is None and self.message_id is None:
            return None
        return {
            "reason": self.bounce_reason,
            "message_id": self.message_id,
            "instance_id": self.instance_id,
            "at": isoformat(self.bounced_at),
            "error": self.error,
        }
