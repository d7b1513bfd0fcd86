"""Unit tests: no database, no processes, no sockets (checked here, so a test that
needs one of them is moved to tests/integration rather than slowing this folder)."""

from __future__ import annotations

import socket
import subprocess
from typing import Any

import pytest
from agent_contexts import make_context

__all__ = ["make_context"]

#: Fixtures that hand out a database (tests/conftest.py).
_DATABASES = {"db_url", "empty_db_url", "make_relay", "relay_api", "cli"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        used = _DATABASES & set(getattr(item, "fixturenames", ()))
        if used and "tests/unit/" in str(item.path).replace("\\", "/"):
            raise pytest.UsageError(f"{item.nodeid} is a unit test but uses {sorted(used)}")


@pytest.fixture(autouse=True)
def _no_processes_or_sockets(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a unit test may not start processes or open connections")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
