"""Docs that must not drift from the code: the state-machine table and diagram,
the configuration reference, and the README's test command that CI runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from relay.config import DEFAULTS, env_name
from relay.core.states import TRANSITIONS, Event, State

ROOT = Path(__file__).resolve().parents[2]
STATE_DOC = ROOT / "docs" / "state-machine.md"
CONFIG_DOC = ROOT / "docs" / "configuration.md"
PRIOR = "prior state"


def _cells(line: str) -> list[str]:
    return [cell.strip().strip("`").strip() for cell in line.strip().strip("|").split("|")]


def parse_transition_table(text: str) -> list[tuple[str, str, str]]:
    """Rows of the markdown table whose header starts ``| from | event | to |``."""
    lines = text.splitlines()
    headers = [
        number
        for number, line in enumerate(lines)
        if line.lstrip().startswith("|") and _cells(line)[:3] == ["from", "event", "to"]
    ]
    assert headers, "no | from | event | to | table found"
    rows = []
    for line in lines[headers[0] + 2 :]:
        if not line.lstrip().startswith("|"):
            break
        cells = _cells(line)
        rows.append((cells[0], cells[1], cells[2]))
    return rows


def code_table() -> list[tuple[str, str, str]]:
    return [
        (
            state.value,
            event.value,
            PRIOR if state is State.PAUSED and event is Event.RESUME else target.value,
        )
        for state, row in TRANSITIONS.items()
        for event, target in row.items()
    ]


def mermaid_blocks(text: str) -> list[str]:
    return re.findall(r"```mermaid\n(.*?)```", text, re.S)


def test_the_documented_table_equals_the_code() -> None:
    documented = parse_transition_table(STATE_DOC.read_text(encoding="utf-8"))
    assert len(documented) == len(set(documented)), "a row is listed twice"
    missing = sorted(set(code_table()) - set(documented))
    extra = sorted(set(documented) - set(code_table()))
    assert not missing, f"rows in relay/core/states.py but not in the doc: {missing}"
    assert not extra, f"rows in the doc but not in relay/core/states.py: {extra}"


def test_the_table_parser_notices_a_difference() -> None:
    text = STATE_DOC.read_text(encoding="utf-8")
    broken = text.replace("| QUEUED | `pause` | PAUSED |", "| QUEUED | `pause` | ACTIVE |")
    assert broken != text
    assert set(parse_transition_table(broken)) != set(code_table())


def test_every_state_is_described() -> None:
    text = STATE_DOC.read_text(encoding="utf-8")
    for state in State:
        assert f"| `{state.value}` |" in text, state


def test_the_mermaid_diagram_exists_and_only_draws_real_transitions() -> None:
    blocks = mermaid_blocks(STATE_DOC.read_text(encoding="utf-8"))
    assert blocks, "docs/state-machine.md has no mermaid block"
    diagram = blocks[0]
    assert diagram.lstrip().startswith("stateDiagram-v2")
    edges = re.findall(r"^\s*(\S+)\s*-->\s*(\S+)\s*(?::\s*(.*))?$", diagram, re.M)
    assert len(edges) > 20
    drawn_states = set()
    for source, target, label in edges:
        drawn_states |= {source, target} - {"[*]"}
        if "[*]" in (source, target):
            continue
        events = [e.strip() for e in re.split(r"[/,]", label)]
        for event in events:
            assert Event(event) in TRANSITIONS[State(source)], (source, event)
            expected = TRANSITIONS[State(source)][Event(event)]
            assert expected is State(target), (source, event, target)
    assert drawn_states == {s.value for s in State}


# -- configuration ----------------------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(DEFAULTS))
def test_every_configuration_key_is_documented(key: str) -> None:
    text = CONFIG_DOC.read_text(encoding="utf-8")
    assert f"`{key}`" in text, f"{key} is missing from docs/configuration.md"
    assert env_name(key) in text, f"{env_name(key)} is missing from docs/configuration.md"


def test_documented_defaults_match_the_code() -> None:
    text = CONFIG_DOC.read_text(encoding="utf-8")
    rows = {}
    for line in text.splitlines():
        cells = _cells(line) if line.lstrip().startswith("|") else []
        if len(cells) >= 3 and cells[0] in DEFAULTS:
            rows[cells[0]] = cells[2]
    assert set(rows) == set(DEFAULTS)
    for key, documented in rows.items():
        value = DEFAULTS[key]
        shown = '""' if value == "" else str(value)
        if isinstance(value, bool):
            shown = shown.lower()  # as written in TOML
        assert documented.strip("`") == shown, (key, documented, shown)


# -- README and CI ------------------------------------------------------------------------------


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```(?:sh|bash|console)?\n(.*?)```", readme, re.S)
    assert blocks, "README.md has no code block"
    command = blocks[0].strip()
    assert "pytest" in command and ".[test]" in command
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert command in ci


def test_readme_links_point_at_existing_docs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert "docs/state-machine.md" in links
    for link in links:
        assert (ROOT / link).is_file(), link
