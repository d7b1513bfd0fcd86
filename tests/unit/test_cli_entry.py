"""The console script builds only the command it runs when the command line says
plainly which one that is; help, the version, completion and anything unusual get
the whole command tree."""

from __future__ import annotations

import pytest

from relay.cli.main import app, asked_for, run


@pytest.mark.parametrize(
    ("args", "command"),
    [
        (["list", "--limit", "5"], "list"),
        (["--config", "list", "show", "x"], "show"),
        (["--config=relay.toml", "contact", "list"], "contact"),
        (["-c", "a.toml", "--database", "sqlite:///x.db", "--actor", "bot", "tick"], "tick"),
        (["--help"], None),
        (["--version"], None),
        (["--install-completion"], None),
        (["-cfile.toml", "list"], None),
        ([], None),
    ],
)
def test_the_command_a_line_names(args: list[str], command: str | None) -> None:
    assert asked_for(args) == command


def test_an_unknown_command_still_gets_suggestions(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        run(["lst"])
    assert exited.value.code == 2
    assert "Did you mean 'list'?" in capsys.readouterr().err


def test_the_whole_tree_is_back_after_a_run(capsys: pytest.CaptureFixture[str]) -> None:
    before = (list(app.registered_commands), list(app.registered_groups))
    with pytest.raises(SystemExit):
        run(["show", "--help"])
    assert "Usage: relay show" in " ".join(capsys.readouterr().out.split())
    assert (app.registered_commands, app.registered_groups) == before
