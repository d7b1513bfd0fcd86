"""A read command loads no write side: each runs in a fresh interpreter (as a user
runs it) and reports which modules it loaded. Deterministic, unlike timing it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from relay.store.migrate import upgrade_url

#: Modules a read command must not load: migrations, the scheduler, HTTP, the
#: write side of the engine, the ORM's mapped classes (reads run on the Core
#: tables), the claiming module, agents and channels and the turn's data they take,
#: Rich's console (for --json).
NOT_FOR_READS = (
    "alembic",
    "apscheduler",
    "httpx",
    "jinja2",
    "prometheus_client",
    "starlette",
    "relay.console.app",
    "relay.runner.metrics",
    "relay.engine.conversation.transitions",
    "relay.engine.turns.runner",
    "relay.engine.inbound.ingest",
    "relay.engine.outbox.dispatcher",
    "relay.engine.verbs.campaigns",
    "relay.store.events",
    "relay.store.models",
    "relay.store.claims",
    "relay.core.turns",
    "relay.agents.base",
    "relay.channels.base",
    "relay.runner.pulse",
    "rich.console",
)

PROBE = """
import json, sys
from relay.cli.main import run
try:
    run(sys.argv[1:])
except SystemExit as exit:
    assert not exit.code, exit.code
loaded = [name for name in json.loads(sys.stdin.read()) if name in sys.modules]
print(json.dumps(loaded), file=sys.stderr)
"""


@pytest.fixture
def sqlite_url(tmp_path: Path, make_relay: Callable[..., Any]) -> tuple[str, str]:
    url = f"sqlite:///{tmp_path / 'relay.db'}"
    upgrade_url(url)
    started = make_relay(url).start("+1 555 123 0001", "Cold reads", ["Which day?"])
    return url, started.id


@pytest.mark.parametrize("command", [["list", "--json"], ["status", "--json"], ["show"]])
def test_a_read_command_loads_no_write_side(
    sqlite_url: tuple[str, str], command: list[str]
) -> None:
    url, instance_id = sqlite_url
    args = [*command, instance_id, "--json"] if command == ["show"] else command
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "--database", url, *args],
        input=json.dumps(NOT_FOR_READS),
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stderr.splitlines()[-1]) == []
