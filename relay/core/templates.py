"""A conversation's own approved WhatsApp template (a Twilio Content SID and its
variables), checked when the conversation is started rather than when the
24-hour window closes days later and the send fails with nobody watching."""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any

from relay.core.errors import InvalidInput

#: A Twilio Content SID: HX and 32 hex digits.
CONTENT_SID = re.compile(r"HX[0-9a-fA-F]{32}")
#: Twilio's variable names: "1", "2", ... or words.
VARIABLE = re.compile(r"[A-Za-z0-9_]{1,64}")
#: What a variable's value may name; filled from the message at send time.
FIELDS = frozenset({"text", "instance_id"})
MAX_VALUE = 1024


def content_template(sid: str | None, variables: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``{"sid", "variables"}`` as stored on the conversation, or None for no template."""
    if sid is None or not sid.strip():
        if variables:
            raise InvalidInput("template variables need a template SID (HX...)")
        return None
    sid = sid.strip()
    if not CONTENT_SID.fullmatch(sid):
        raise InvalidInput(f"template {sid!r}: expected a Twilio Content SID, HX and 32 hex digits")
    checked = {}
    for key, value in (variables or {}).items():
        name = str(key).strip()
        if not VARIABLE.fullmatch(name):
            raise InvalidInput(f"template variable {name!r}: expected a name such as 1 or 2")
        checked[name] = _value(name, value)
    return {"sid": sid, "variables": checked}


def _value(name: str, value: Any) -> str:
    text = str(value)
    if len(text) > MAX_VALUE:
        raise InvalidInput(f"template variable {name}: longer than {MAX_VALUE} characters")
    try:
        named = {field for _, field, _, _ in string.Formatter().parse(text) if field is not None}
    except ValueError as exc:
        raise InvalidInput(
            f"template variable {name}: {exc} (write {{{{ and }}}} for braces)"
        ) from None
    unknown = named - FIELDS
    if unknown:
        raise InvalidInput(
            f"template variable {name}: {{{sorted(unknown)[0]}}} is not known "
            "({text} and {instance_id} are; write {{ and }} for braces)"
        )
    return text
