"""relay's option values are coerced without pydantic (a quicker start), and bad
values are still refused with a clear message and exit code 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from relay.cli import coercion
from relay.cli.main import app


def _parameters(command: Any) -> list[Any]:
    found = list(command.params)
    for sub in getattr(command, "commands", {}).values():
        found += _parameters(sub)
    return found


def test_every_relay_option_takes_the_plain_path() -> None:
    parameters = [
        p for p in _parameters(typer.main.get_command(app)) if hasattr(p, "type_descriptor")
    ]
    assert len(parameters) > 100
    left = [p.name for p in parameters if coercion.plain_converter(p.type_descriptor) is None]
    assert left == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["list", "--limit", "x"], "relay: error: invalid value for '--limit': 'x' is not a"),
        (["list", "--limit", "1.5"], "'1.5' is not a valid integer (see 'relay list -h')"),
    ],
)
def test_a_bad_value_is_refused_with_exit_2(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())


def test_values_arrive_converted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    probe = typer.Typer()

    @probe.command()
    def command(
        count: int = 1,
        ratio: float = 0.5,
        where: Path = Path("."),
        tag: list[str] = typer.Option([]),  # noqa: B008
        flag: bool = False,
    ) -> None:
        seen.update(count=count, ratio=ratio, where=where, tag=tag, flag=flag)

    result = CliRunner().invoke(
        probe,
        ["--count", "7", "--ratio", "2", "--where", "a/b", "--tag", "x", "--tag", "y", "--flag"],
    )
    assert result.exit_code == 0, result.output
    assert seen == {"count": 7, "ratio": 2.0, "where": Path("a/b"), "tag": ["x", "y"], "flag": True}


def test_a_command_runs_without_importing_pydantic(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from relay.cli.main import run\n"
        "sys.argv = ['relay', 'list', '--limit', '1', '--json']\n"
        "try:\n    run()\nexcept SystemExit as exc:\n    code = exc.code\n"
        "print('pydantic' in sys.modules, code, file=sys.stderr)\n"
    )
    # No relay.toml: the default database is made in the working folder.
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAY_")}
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.stderr.strip().splitlines()[-1] == "False 0", done.stderr
