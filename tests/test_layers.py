"""The layers of DESIGN.md, checked on the source: imports point downwards only."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "relay"

# layer -> relay packages it may import (besides itself and the stdlib).
ALLOWED = {
    "core": set(),
    "store": {"core"},
    "agents": {"core"},
    "channels": {"core"},
    "engine": {"core", "store", "agents", "channels", "config"},
    "runner": {"core", "store", "agents", "channels", "config", "engine"},
    "cli": {"core", "engine", "config", "store", "testing", "runner", "api"},
}
THIRD_PARTY = {
    "core": set(),
    "store": {"sqlalchemy", "alembic"},
    "agents": {"httpx"},
    "channels": {"httpx", "imapclient", "mailparser_reply"},
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_imports_point_downwards(layer: str) -> None:
    bad = []
    for path in sorted((ROOT / layer).glob("*.py")):
        for module in _imports(path):
            top = module.split(".")[0]
            if top == "relay":
                parts = module.split(".")
                target = parts[1] if len(parts) > 1 else ""
                if target not in ("", layer) and target not in ALLOWED[layer]:
                    bad.append(f"{path.name} imports {module}")
            elif (
                top not in sys.stdlib_module_names
                and layer in THIRD_PARTY
                and top not in THIRD_PARTY[layer]
            ):
                bad.append(f"{path.name} imports {module}")
    assert bad == []
