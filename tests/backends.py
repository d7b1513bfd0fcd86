"""Narrow the ``db_url`` fixture to one backend (the test id stays ``[sqlite]`` or
``[postgres]``), for tests whose subject exists on one database only."""

from __future__ import annotations

import pytest

SQLITE_ONLY = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
POSTGRES_ONLY = pytest.mark.parametrize(
    "db_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)
