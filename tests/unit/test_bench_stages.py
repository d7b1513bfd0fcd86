"""``bench/pulse_throughput.py --breakdown`` (documented in docs/performance-history.md)
times a pulse's stages by patching relay's functions by name: a rename in relay
must fail here, not leave the documented command failing."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_every_timed_stage_names_a_function_relay_has(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    bench = importlib.import_module("pulse_throughput")
    for label, module_name, owner_name, attribute in bench.Stages.TARGETS:
        owner = importlib.import_module(module_name)
        if owner_name is not None:
            owner = getattr(owner, owner_name)
        assert callable(getattr(owner, attribute, None)), f"{label}: no {owner_name}.{attribute}"
