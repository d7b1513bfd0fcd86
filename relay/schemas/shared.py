"""The definitions every schema shares (a conversation, its todos, messages,
history and result), kept once: ``$defs`` of ``instance.json`` is the source,
and each other schema carries a copy so that it stays self-contained for a
program that loads one schema alone. A test fails when a copy drifts; after
editing the source, copy it into the others with::

    python -m relay.schemas.shared
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FOLDER = Path(__file__).parent
SOURCE = "instance.json"


def _read(path: Path) -> dict[str, object]:
    document: dict[str, object] = json.loads(path.read_text("utf-8"))
    return document


def stale(folder: Path = FOLDER) -> list[str]:
    """The schemas whose ``$defs`` differ from the source's."""
    shared = _read(folder / SOURCE)["$defs"]
    return sorted(p.name for p in folder.glob("*.json") if _read(p)["$defs"] != shared)


def sync(folder: Path = FOLDER) -> list[str]:
    """Copy the source's ``$defs`` into every schema that differs; their names."""
    shared = _read(folder / SOURCE)["$defs"]
    changed = stale(folder)
    for name in changed:
        document = _read(folder / name)
        document["$defs"] = shared
        (folder / name).write_text(json.dumps(document, indent=2) + "\n", "utf-8")
    return changed


def main() -> int:
    changed = sync()
    print(f"updated: {', '.join(changed)}" if changed else "every schema is in step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
