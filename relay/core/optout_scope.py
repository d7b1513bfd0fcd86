"""How far an opt-out reaches: the whole contact (the default) or only the kind
of address it was said on (``[compliance] optout_scope = "channel"``).

Kinds, not channels: SMS and WhatsApp both write to the phone number, so a STOP
by SMS stops both; an email unsubscribe stops email; Telegram its chat.
"""

from __future__ import annotations

from relay.core.errors import InvalidInput

CONTACT = "contact"
CHANNEL = "channel"
SCOPES = (CONTACT, CHANNEL)

#: The names ``--channel-kind`` takes, and the kind of address each writes to.
FLAG_KINDS = {
    "sms": "phone",
    "whatsapp": "phone",
    "phone": "phone",
    "email": "email",
    "telegram": "telegram",
}


def kind_for_flag(value: str) -> str:
    """The address kind of a ``--channel-kind`` value, or InvalidInput (exit 2)."""
    kind = FLAG_KINDS.get(value.strip().lower())
    if kind is None:
        raise InvalidInput(f"--channel-kind must be one of sms, email, telegram, not {value!r}")
    return kind
