"""The version every JSON document relay prints carries (``schema_version``).

The shapes are JSON Schemas shipped in :mod:`relay.schemas`. The version changes
only when a field is removed or changes meaning; a new field keeps it.
"""

from __future__ import annotations

from typing import Any

SCHEMA_VERSION = 1


def versioned(data: Any) -> Any:
    """Every JSON object gets ``schema_version`` first (in a list: each object in it)."""
    if isinstance(data, dict):
        return {"schema_version": SCHEMA_VERSION, **data}
    if isinstance(data, list):
        return [versioned(item) if isinstance(item, dict) else item for item in data]
    return data
