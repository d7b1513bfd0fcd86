"""The schemas' shared definitions have one source (``relay.schemas.shared``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from relay.schemas import shared


def test_every_schema_carries_the_shared_definitions_unchanged() -> None:
    assert shared.stale() == [], "run `python -m relay.schemas.shared` after editing instance.json"


def test_sync_copies_the_source_into_a_schema_that_drifted(tmp_path: Path) -> None:
    for path in shared.FOLDER.glob("*.json"):
        shutil.copy(path, tmp_path / path.name)
    drifted = tmp_path / "wait.json"
    document = json.loads(drifted.read_text("utf-8"))
    del document["$defs"]["todo"]
    drifted.write_text(json.dumps(document, indent=2) + "\n", "utf-8")

    assert shared.stale(tmp_path) == ["wait.json"]
    assert shared.sync(tmp_path) == ["wait.json"]
    assert shared.stale(tmp_path) == []
    assert drifted.read_text("utf-8") == (shared.FOLDER / "wait.json").read_text("utf-8")
