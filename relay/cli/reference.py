"""Generate docs/cli.md from the commands' own ``--help``, so the reference cannot drift.

Run ``python -m relay.cli.reference > docs/cli.md`` after changing a command;
a test fails when the file and the code disagree.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

HEADER = """\
# CLI reference

Generated from `relay … --help` by `python -m relay.cli.reference > docs/cli.md`;
`tests/unit/test_cli_reference.py` fails when this page and the code disagree.

Exit codes for every command: **0** success; **1** refused by the state machine
(the message names the instance's state and the events allowed from it);
**2** usage error, not found, ambiguous id, bad input or configuration error;
**3** `relay daemon status` when no daemon runs; **130** interrupted.
Errors are one line on stderr, prefixed `relay: error:`.
"""


def _paths(command: object, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield prefix
    commands = getattr(command, "commands", None) or {}
    for name in sorted(commands):
        yield from _paths(commands[name], (*prefix, name))


def render_reference() -> str:
    import typer.main
    from typer.testing import CliRunner

    from relay.cli.main import app

    os.environ["TERMINAL_WIDTH"] = "100"
    runner = CliRunner()
    group = typer.main.get_command(app)
    parts = [HEADER]
    for path in _paths(group):
        result = runner.invoke(
            app, [*path, "--help"], env={"NO_COLOR": "1", "COLUMNS": "100", "TERMINAL_WIDTH": "100"}
        )
        title = " ".join(("relay", *path))
        body = "\n".join(line.rstrip() for line in result.output.strip("\n").splitlines())
        parts.append(f"## `{title}`\n\n```text\n{body}\n```\n")
    return "\n".join(parts)


if __name__ == "__main__":
    print(render_reference(), end="")
