"""A pushed request's :class:`Incoming` as one line of JSON, and back.

``relay serve`` stores what a provider pushed in this form (the ``pushes``
table) and the daemon reads it back to ingest it, so the server's request does
one INSERT of text and nothing else. ASCII JSON: a NUL or a lone surrogate in
a provider's text is escaped (``\\u0000``), so the row always stores on either
database, and the daemon's ingest cleans it as it cleans a poll's
(:mod:`relay.engine.inbound.quarantine`).
"""

from __future__ import annotations

import json
from dataclasses import fields
from datetime import datetime
from typing import Any

from relay.channels.base import Inbound, Incoming, Receipt
from relay.core.values import DeliveryStatus, InboundKind

#: The fields that hold a time (as ISO 8601 text in the JSON).
_TIMES = frozenset({"received_at", "resume_at", "at"})


def dumps(incoming: Incoming) -> str:
    """The messages and receipts (a push has no position and nothing rejected)."""
    return json.dumps(
        {
            "messages": [_plain(item) for item in incoming.messages],
            "receipts": [_plain(item) for item in incoming.receipts],
        },
        separators=(",", ":"),
    )


def loads(text: str) -> Incoming:
    data = json.loads(text)
    return Incoming(
        messages=[_inbound(item) for item in data.get("messages", ())],
        receipts=[_receipt(item) for item in data.get("receipts", ())],
    )


#: Each class's fields and their defaults (``fields()`` costs more than the rest).
_FIELDS = {
    cls: tuple((field.name, field.default) for field in fields(cls)) for cls in (Inbound, Receipt)
}


def _plain(item: Inbound | Receipt) -> dict[str, Any]:
    """The fields that differ from their defaults, times as ISO text."""
    out: dict[str, Any] = {}
    for name, default in _FIELDS[type(item)]:
        value = getattr(item, name)
        if value == default:
            continue
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, tuple):
            value = list(value)
        out[name] = value
    return out


def _times(data: dict[str, Any]) -> dict[str, Any]:
    return {
        key: datetime.fromisoformat(value) if key in _TIMES and value is not None else value
        for key, value in data.items()
    }


def _inbound(data: dict[str, Any]) -> Inbound:
    values = _times(data)
    values["references"] = tuple(values.get("references", ()))
    values["kind"] = InboundKind(values.get("kind", InboundKind.MESSAGE))
    return Inbound(**values)


def _receipt(data: dict[str, Any]) -> Receipt:
    values = _times(data)
    values["status"] = DeliveryStatus(values["status"])
    return Receipt(**values)
