"""Contact addresses: phone numbers to E.164, email addresses validated.

One person written two ways (``+1 555 123 0001`` and ``+15551230001``,
``Ana@X.com`` and ``ana@x.com``) must be one contact, so every address is
normalised before it is looked up or stored. Email addresses are lower-cased
whole, local part included.
"""

from __future__ import annotations

from dataclasses import dataclass

from relay.core.errors import InvalidInput


@dataclass(frozen=True)
class Address:
    value: str
    kind: str  # "phone" | "email" | "telegram"


#: A Telegram chat id as a contact: ``telegram:123456789`` (groups: ``telegram:-100...``).
TELEGRAM_PREFIX = "telegram:"


def normalise_address(text: str, region: str = "US") -> Address:
    raw = text.strip()
    if not raw:
        raise InvalidInput("contact address is empty")
    if raw.lower().startswith(TELEGRAM_PREFIX):
        return _telegram(raw)
    if "@" in raw:
        return _email(raw)
    return _phone(raw, region)


def kind_of(normalised: str) -> str:
    """The kind of an address that :func:`normalise_address` already returned
    (a bulk insert need not parse a phone number a second time)."""
    if normalised.startswith(TELEGRAM_PREFIX):
        return "telegram"
    return "email" if "@" in normalised else "phone"


def _email(raw: str) -> Address:
    from email_validator import EmailNotValidError, validate_email

    try:
        result = validate_email(raw, check_deliverability=False)
    except EmailNotValidError as exc:
        raise InvalidInput(f"invalid email address {raw!r}: {exc}") from None
    local, _, domain = result.normalized.rpartition("@")
    # RFC 5321 lets a server treat the local part case-sensitively, but no common
    # provider does, and people type ``Ana@`` and ``ana@`` for one mailbox: one contact.
    return Address(f"{local.lower()}@{domain.lower()}", "email")


def _phone(raw: str, region: str) -> Address:
    import phonenumbers

    try:
        number = phonenumbers.parse(raw, region.upper() or None)
    except phonenumbers.NumberParseException as exc:
        raise InvalidInput(
            f"invalid contact {raw!r}: not a phone number or email ({exc})"
        ) from None
    # Possible, not valid: fictional ranges such as 555 must still work in demos and tests.
    if not phonenumbers.is_possible_number(number):
        raise InvalidInput(f"invalid phone number {raw!r}")
    return Address(phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164), "phone")


def _telegram(raw: str) -> Address:
    chat = raw[len(TELEGRAM_PREFIX) :].strip()
    if not chat.lstrip("-").isdigit():
        raise InvalidInput(
            f"invalid Telegram contact {raw!r}: expected telegram:<chat id>, "
            "such as telegram:123456789"
        )
    return Address(f"{TELEGRAM_PREFIX}{int(chat)}", "telegram")
