"""docs/cli.md is generated from the commands' --help and must not drift from it."""

from __future__ import annotations

from pathlib import Path

from relay.cli.reference import render_reference

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_cli_reference_matches_the_code() -> None:
    expected = render_reference()
    assert DOC.read_text(encoding="utf-8") == expected, (
        "docs/cli.md is out of date; run `python -m relay.cli.reference > docs/cli.md`"
    )


def test_reference_covers_every_command() -> None:
    text = DOC.read_text(encoding="utf-8")
    for command in (
        "start",
        "list",
        "show",
        "transcript",
        "history",
        "pause",
        "resume",
        "cancel",
        "send",
        "receive",
        "status",
        "tick",
        "demo",
        "doctor",
        "contact opt-out",
        "daemon stop",
        "db upgrade",
        "config show",
        "import",
        "stats",
        "watch",
        "inbox",
        "retry",
        "contact list",
    ):
        assert f"## `relay {command}`" in text
