"""``relay inspect``: the daemon's own reading of a message, without a store.

Each function calls what the daemon calls on what arrives (the mail
channel's reading, the reply text and opt-out rules, the address
normalisation), so ``relay inspect`` shows exactly what relay would decide.
Re-exported by :mod:`relay.api`, which the CLI goes through.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from relay.core.errors import InvalidInput

if TYPE_CHECKING:
    from relay.config import Config


def inspect_mail(raw: bytes, file: str) -> dict[str, Any]:
    """What relay makes of one raw mail (``relay inspect mail``): the same reading
    the mail channel makes of what arrives (schema: inspect-mail.json)."""
    from relay.channels.mail.reading import describe, read_mail

    return describe(read_mail(raw), file)


def inspect_text(line: str) -> dict[str, Any]:
    """The text the agent would see of one message, and whether it opts out or in."""
    from relay.channels.mail.text import new_part
    from relay.core.optout import is_opt_in, is_opt_out

    kept = new_part(line)
    return {"text": kept, "opt_out": is_opt_out(kept), "opt_in": is_opt_in(kept)}


def inspect_address(
    value: str, region: str, channel: str | None = None, config: Config | None = None
) -> dict[str, Any]:
    """The address relay would store for ``value``, or the one-line reason it refuses it.
    ``channel`` is read by its type in ``config`` (``[channels.wa] type = "whatsapp"``)
    as ``relay start`` reads it; without a ``relay.toml``, the name is the type."""
    from relay.engine.contacts.addresses import normalise_address
    from relay.engine.runtime import channel_kind

    kind = channel_kind(config, channel) if channel and config is not None else channel
    try:
        found = normalise_address(value, region, channel=kind)
    except InvalidInput as exc:
        return {"input": value, "address": None, "error": exc.message}
    return {"input": value, "address": found.value, "error": None}
