"""Every `--json` output validates against its JSON Schema in relay/schemas, so a
program can rely on the shapes across releases."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_checks import valid
from jsonschema import Draft202012Validator

from relay import schemas

Cli = Callable[..., Any]
PHONE = "+15551230001"


def out(result: Any) -> Any:
    assert result.exit_code in (0, 3), result
    return result.json()


def test_every_schema_is_a_valid_json_schema_naming_its_commands() -> None:
    names = [n for n in schemas.names() if n != schemas.DEFINITIONS]
    assert len(names) >= 21
    for name in names:
        document = schemas.load(name)
        Draft202012Validator.check_schema(document)
        assert document["$id"] == schemas.BASE + name
        assert document["x-relay-commands"], name


def _json_commands() -> set[str]:
    """Every command path (``"contact list"``) that takes ``--json``."""
    import typer.main

    from relay.cli.main import app

    found: set[str] = set()

    def walk(command: Any, path: tuple[str, ...]) -> None:
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, (*path, name))
        if any("--json" in getattr(p, "opts", ()) for p in getattr(command, "params", ())):
            found.add(" ".join(path))

    walk(typer.main.get_command(app), ())
    return found


#: Commands whose only output is JSON (no ``--json`` flag to look for).
ALWAYS_JSON = {"contact export"}


def test_every_command_with_json_output_has_a_schema() -> None:
    named = [c for n in schemas.names() for c in schemas.load(n).get("x-relay-commands", ())]
    assert len(named) == len(set(named)), "a command is named by two schemas"
    # "contact opt-out --file": a flag that changes the shape has its own schema
    assert _json_commands() | ALWAYS_JSON == {c.split(" --")[0] for c in named}


def test_every_command_json_output_matches_its_schema(cli: Cli, tmp_path: Path) -> None:
    started = valid("instance", out(cli("start", PHONE, "-o", "x", "--todo", "Day?::date",
                                         "--meta", "k=v", "--json")))  # fmt: skip
    iid = started["id"]
    valid("message", out(cli("receive", PHONE, "2024-05-03", "--json")))
    valid("tick", out(cli("tick", "--json")))
    valid("instance", out(cli("show", iid, "--json")))
    valid("instance-list", out(cli("list", "--json", "--results")))
    valid("transcript", out(cli("transcript", iid, "--json")))
    valid("history", out(cli("history", iid, "--commands", "--json")))
    valid("result", out(cli("result", iid, "--json")))
    valid("wait", out(cli("wait", iid, "--json")))
    lines = cli("events", "--json").stdout.splitlines()
    assert lines
    for line in lines:
        valid("event", json.loads(line))
    second = out(cli("start", PHONE, "-o", "y", "--todo", "Other?", "--defer", "--json"))
    valid("instance", out(cli("pause", second["id"], "--json")))
    valid("instance", out(cli("resume", second["id"], "--json")))
    valid("message", out(cli("send", second["id"], "hello", "--json")))
    valid("instance", out(cli("cancel", second["id"], "--json")))
    valid("status", out(cli("status", "--json")))
    for command in (["show"], ["set", "--tz", "Europe/Madrid"], ["opt-out"], ["opt-in"],
                    ["deliverable"]):  # fmt: skip
        valid("contact", out(cli("contact", command[0], PHONE, *command[1:], "--json")))
    valid("doctor", out(cli("doctor", "--json")))
    valid("db-current", out(cli("db", "current", "--json")))
    valid("config", out(cli("config", "show", "--json")))
    drafted = valid("instance", out(cli("start", "+15551230009", "-o", "z", "--todo", "Day?",
                                        "--approval", "all", "--json")))  # fmt: skip
    listed = valid("drafts", out(cli("drafts", "--json")))
    assert [d["instance_id"] for d in listed] == [drafted["id"]]
    valid("message", out(cli("reject", str(listed[0]["id"]), "--reason", "no", "--json")))
    assert cli("tick").exit_code == 0
    (again,) = valid("drafts", out(cli("drafts", "--json")))
    valid("message", out(cli("approve", str(again["id"]), "--json")))
    valid("wait", cli("wait", drafted["id"], "--timeout", "1s", "--json").json())
    for line in cli("events", "--json").stdout.splitlines():
        valid("event", json.loads(line))


def test_demo_and_daemon_status_json(run_cli: Cli, cli: Cli) -> None:
    valid("demo", out(run_cli("demo", "--json")))
    valid("daemon-status", out(cli("daemon", "status", "--json")))


@pytest.mark.parametrize("data", [[{"id": 1}], {"schema_version": 2}])
def test_the_schemas_do_refuse_other_shapes(data: Any) -> None:
    assert list(schemas.validator("result").iter_errors(data))
