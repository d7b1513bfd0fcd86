"""The engine's wings and the import graph: every module (subpackages included),
every import (inside functions and under ``TYPE_CHECKING`` too)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "relay"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def _named(module: str, names: list[str], known: dict[str, Path]) -> Iterator[str]:
    """``from a.b import c``: ``a.b.c`` when that is a module, else ``a.b``."""
    for name in names:
        yield f"{module}.{name}" if f"{module}.{name}" in known else module


def imports_of(module: str, known: dict[str, Path]) -> set[str]:
    """The relay modules ``module`` imports, wherever in the file."""
    path = known[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.update(_named(base, [alias.name for alias in node.names], known))
    return {name for name in found if name in known and name != module}


def graph() -> dict[str, set[str]]:
    known = modules()
    return {module: imports_of(module, known) for module in known}


def reachable(edges: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Groups of modules that import each other, directly or around a circle."""
    reach = {module: reachable(edges, module) for module in edges}
    found: list[list[str]] = []
    placed: set[str] = set()
    for module in sorted(edges):
        if module in placed or module not in reach[module]:
            continue
        group = sorted(m for m in reach[module] if module in reach[m])
        placed.update(group)
        found.append(group)
    return found


#: Engine wing (or shared module) -> the other parts of the engine it may import.
#: Read downwards: views and conversation at the bottom, the operator's verbs on top.
WINGS: dict[str, set[str]] = {
    "runtime": set(),
    "views": set(),
    "conversation": {"runtime"},
    "contacts": {"runtime", "conversation"},
    "inbound": {"runtime", "conversation", "contacts"},
    "outbox": {"runtime", "conversation", "contacts", "inbound"},
    "turns": {"runtime", "conversation", "contacts", "inbound", "outbox"},
    "verbs": {
        "runtime",
        "views",
        "conversation",
        "contacts",
        "inbound",
        "outbox",
        "turns",
    },
}

#: Circles allowed: none. The verbs wing's last one went with the mixins of the old
#: ``service.Relay`` (issue 27); the list stays so that a change shows as a diff.
KNOWN_CIRCLES: list[list[str]] = []


def _wing(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] != ["relay", "engine"] or len(parts) < 3:
        return None
    return parts[2]


def test_every_engine_module_is_in_a_wing() -> None:
    """The engine's top level holds the wings and the shared modules only."""
    loose = [m for m in modules() if _wing(m) is not None and _wing(m) not in WINGS]
    assert loose == []


@pytest.mark.parametrize("wing", sorted(WINGS))
def test_a_wing_imports_only_the_wings_below_it(wing: str) -> None:
    bad = [
        f"{module} imports {target}"
        for module, targets in graph().items()
        if _wing(module) == wing
        for target in sorted(targets)
        if (other := _wing(target)) not in (None, wing) and other not in WINGS[wing]
    ]
    assert bad == []


def test_no_engine_or_runner_module_imports_the_facade() -> None:
    """The engine and the runner take the runtime (relay.engine.runtime), never the
    facade, not even to annotate a parameter."""
    bad = [
        m
        for m, targets in graph().items()
        if m.startswith(("relay.engine", "relay.runner")) and "relay.api" in targets
    ]
    assert bad == []


def _classes_named_relay() -> list[tuple[str, ast.ClassDef]]:
    return [
        (module, node)
        for module, path in modules().items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and node.name == "Relay"
    ]


def test_one_class_named_relay_the_facade_without_mixins() -> None:
    """``relay.api.Relay`` is the only Relay and inherits nothing: each verb is a
    line handing the runtime to a function of a wing."""
    found = _classes_named_relay()
    assert [module for module, _ in found] == ["relay.api"]
    ((_, facade),) = found
    assert [ast.unparse(base) for base in facade.bases] in ([], ["object"])
    assert facade.keywords == []


def test_the_facade_hides_the_engines_helpers() -> None:
    """What the old service class made public for its mixins is gone from the API."""
    from relay.api import Relay

    helpers = {"who", "address", "channel", "channel_position", "prepare", "create"}
    helpers |= {"check_backends", "address_problem", "keywords", "soft_bounces"}
    assert helpers & set(dir(Relay)) == set()


def test_no_import_circle() -> None:
    assert cycles(graph()) == KNOWN_CIRCLES


def test_the_circle_finder_finds_a_circle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(edges) == [["a", "b", "c"]]


def test_the_graph_counts_deferred_and_type_only_imports() -> None:
    """``open_store`` imports the migrations inside a function, and the console's
    pages name the runtime under TYPE_CHECKING; both are edges."""
    edges = graph()
    assert "relay.store.migrate" in edges["relay.store.opening"]
    assert "relay.engine.runtime" in edges["relay.console.pages"]
