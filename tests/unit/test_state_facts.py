"""Per-state facts live beside the transition table (``relay.core.states``): no
module outside ``relay/core`` names a state to decide what to do.

The scan reads every module under ``relay/`` (subpackages included) and flags
``State.X`` (however ``State`` was imported) and a string literal that is a
state's name. Naming a state is fine where the module does not decide by it;
each such place is listed below with its reason, and an entry that no longer
matches fails too, so the list cannot go stale.
"""

from __future__ import annotations

import ast
from pathlib import Path

from relay.core.states import (
    ENDED,
    HEARTBEAT_STATES,
    HOLDS_DELIVERY,
    NEEDS_PERSON,
    PAUSED_STATES,
    QUEUED_STATES,
    SLOT_STATES,
    TAKES_REPLIES,
    Effect,
    State,
    delivers,
    entering,
    holds_slot,
    leaving,
)

ROOT = Path(__file__).resolve().parents[2] / "relay"
NAMES = {s.name for s in State}

#: (module, state) -> why naming it there decides nothing.
ALLOWED: dict[tuple[str, str], str] = {}


def _state_aliases(tree: ast.Module) -> set[str]:
    """The local names bound to ``relay.core.states.State`` in a module."""
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "relay.core.states":
            aliases.update(a.asname or a.name for a in node.names if a.name == "State")
    return aliases


def _docstrings(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def named_states(path: Path) -> list[tuple[int, str]]:
    """(line, state) for each state a module names in its code."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases, docs = _state_aliases(tree), _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr in NAMES
        ):
            found.append((node.lineno, node.attr))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value in NAMES
            and id(node) not in docs
        ):
            found.append((node.lineno, node.value))
    return found


def test_no_module_outside_core_names_a_state() -> None:
    seen: set[tuple[str, str]] = set()
    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        module = path.relative_to(ROOT.parent).as_posix()
        if module.startswith("relay/core/"):
            continue
        for line, name in named_states(path):
            if (module, name) in ALLOWED:
                seen.add((module, name))
            else:
                bad.append(f"{module}:{line} names {name}")
    assert bad == [], "read a set of relay.core.states instead:\n" + "\n".join(bad)
    assert seen == set(ALLOWED), f"stale allow-list entries: {set(ALLOWED) - seen}"


def test_the_scan_sees_a_state_however_it_is_named(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""Docstring naming PAUSED is fine."""\n'
        "from relay.core.states import State as S\n"
        "def f(x):\n"
        "    return x is S.PAUSED or x.state == 'QUEUED'\n",
        encoding="utf-8",
    )
    assert named_states(sample) == [(4, "PAUSED"), (4, "QUEUED")]


def test_the_facts_agree_with_each_other() -> None:
    """The sets are facts about one machine: where the heartbeat runs the
    contact holds the slot and replies are taken; held deliveries are the
    queue and the pause; ended states hold no slot."""
    assert HEARTBEAT_STATES <= TAKES_REPLIES <= SLOT_STATES
    assert HOLDS_DELIVERY == QUEUED_STATES | PAUSED_STATES
    assert not (ENDED & SLOT_STATES) and NEEDS_PERSON <= SLOT_STATES
    for state in State:
        assert holds_slot(state, None) == (state in SLOT_STATES)
        assert (delivers(state) is None) == (state in HOLDS_DELIVERY)
        assert (Effect.START_HEARTBEAT in entering(state)) == (state in HEARTBEAT_STATES)
        assert (Effect.STOP_HEARTBEAT in leaving(state)) == (state in HEARTBEAT_STATES)
        assert (Effect.END in entering(state)) == state.terminal
        assert (Effect.RECORD_PRIOR_STATE in entering(state)) == (
            Effect.END_PAUSE in leaving(state)
        )


DOC = ROOT.parent / "docs" / "state-machine.md"


def facts_table() -> str:
    """The table of docs/state-machine.md "What each state means", from the code."""
    from relay.core.states import FAMILIES, TURN_REASONS

    def yes(flag: bool) -> str:
        return "yes" if flag else ""

    goes = {True: "delivered", None: "held", False: "cancelled"}
    family = {s: name for name, states in FAMILIES.items() for s in states}
    rows = [
        "| state | holds the slot | heartbeat runs | takes replies | turn due | "
        "its outbox messages | family |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in State:
        slot = "yes" if s in SLOT_STATES and s not in PAUSED_STATES else ""
        slot = "unless paused while queued" if s in PAUSED_STATES else slot
        turn = TURN_REASONS[s].value if s in TURN_REASONS else ""
        rows.append(
            f"| `{s.value}` | {slot} | {yes(s in HEARTBEAT_STATES)} | "
            f"{yes(s in TAKES_REPLIES)} | {turn} | {goes[delivers(s)]} | {family[s]} |"
        )
    return "\n".join(rows) + "\n"


def test_the_docs_table_of_state_facts_matches_the_code() -> None:
    assert facts_table() in DOC.read_text(encoding="utf-8"), (
        "docs/state-machine.md: copy tests.unit.test_state_facts.facts_table() into it"
    )
