"""``--help`` reads well on narrow terminals: upper-case placeholders (TEXT,
INTEGER, a metavar), never Python type names such as ``<str>``."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from relay.cli.main import app

COMMANDS = (["start"], ["import"], ["stats"], ["list"], ["contact", "show"], [])
TYPE_NAMES = re.compile(r"<(str|int|float|bool|list\[[a-z]+\])>")


@pytest.fixture(autouse=True)
def _width_from_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """typer reads TERMINAL_WIDTH once, at import (``relay.cli.reference`` sets 100
    there): let COLUMNS decide here, and leave the module as it was afterwards."""
    import typer.rich_utils

    monkeypatch.setattr(typer.rich_utils, "MAX_WIDTH", None)


@pytest.mark.parametrize("width", [60, 80])
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "relay")
def test_help_has_no_python_type_placeholders(command: list[str], width: int) -> None:
    env = {"COLUMNS": str(width), "NO_COLOR": "1"}
    result = CliRunner().invoke(app, [*command, "--help"], env=env)
    assert result.exit_code == 0, result.output
    assert not TYPE_NAMES.search(result.output), result.output
    usage = next(line for line in result.output.splitlines() if "Usage:" in line)
    assert "{" not in usage, usage
    assert max(len(line) for line in result.output.splitlines()) <= width


def test_help_names_what_options_take() -> None:
    env = {"COLUMNS": "60", "NO_COLOR": "1"}
    text = CliRunner().invoke(app, ["start", "--help"], env=env).output
    assert "Usage: relay start [OPTIONS] CONTACT" in text
    assert re.search(r"--objective\s+-o\s+TEXT", text)
    assert re.search(r"--max-followups\s+INTEGER", text)
    assert not re.search(r"--defer\s+(TEXT|BOOL)", text)
    imported = CliRunner().invoke(app, ["import", "--help"], env=env).output
    assert "CSV      CSV" not in imported


def test_every_command_sits_in_a_help_panel_in_the_issues_order() -> None:
    from typer.testing import CliRunner

    from relay.cli import panels
    from relay.cli.main import app

    infos = [*app.registered_commands, *app.registered_groups]
    assert all(info.rich_help_panel in panels.PANELS for info in infos)
    assert len(infos) == sum(len(names) for names in panels.PANELS.values())
    shown = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "100", "NO_COLOR": "1"}).output
    headings = [line.strip("╭─ ").split(" ")[0] for line in shown.splitlines() if "╭─" in line]
    assert headings == ["Options", "Conversations", "Contacts", "Campaigns", "Running", "Data"]
