"""``relay serve``'s app with the console on, on uvicorn in a thread on a free
loopback port, over a seeded store (SQLite and PostgreSQL)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from console_support import CONSOLE_KEYS, ENV, METRICS_TOKEN, Served, free_port, seed


@pytest.fixture
def served(
    make_relay: Callable[..., Any],
    db_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Served]:
    import uvicorn

    from relay.api import Relay
    from relay.runner.serve import build_app

    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("METRICS_TOKEN", METRICS_TOKEN)
    made = make_relay(db_url, None, **CONSOLE_KEYS, **{"metrics.token_env": "METRICS_TOKEN"})
    relay = Relay(made.store, made.config, made.clock)
    ids = seed(relay, tmp_path)
    port = free_port()
    config = uvicorn.Config(
        build_app(relay), host="127.0.0.1", port=port, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    try:
        yield Served(relay, f"http://127.0.0.1:{port}", ids)
    finally:
        server.should_exit = True
        thread.join(timeout=20)
