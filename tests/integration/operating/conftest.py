"""The operator's commands run against the same store as this API (the system clock)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


@pytest.fixture
def api(make_relay: Callable[..., Any], db_url: str) -> Any:
    return make_relay(db_url)
