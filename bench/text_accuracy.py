"""How well relay reads what people send: one table over every ``bench/accuracy_*.py``.

Each ``bench/accuracy_<name>.py`` module exposes ``report() -> list[tuple[str, str, str]]``:
rows of (function, figure, target), figures computed on the real-world corpora
under ``tests/data`` (see each module's docstring). This runner imports them
all (in name order) and prints one table; a module that fails to import or
run is reported as a row, so one broken measurement does not hide the rest.

    .venv/bin/python bench/text_accuracy.py
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
Row = tuple[str, str, str]


def modules() -> list[Path]:
    return sorted(HERE.glob("accuracy_*.py"))


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


def rows() -> list[Row]:
    found: list[Row] = []
    for path in modules():
        started = time.perf_counter()
        try:
            report: Callable[[], list[Row]] = load(path).report
            found.extend(report())
        except Exception as exc:  # a broken module is one row, not the end of the table
            found.append((path.stem, f"error: {type(exc).__name__}: {exc}", "-"))
            continue
        seconds = time.perf_counter() - started
        found.append((f"({path.stem} ran in {seconds:.1f}s)", "", ""))
    return found


def main() -> int:
    sys.path.insert(0, str(HERE.parent))
    table = rows()
    width = max((len(f) for f, _, _ in table), default=8)
    size = max((len(v) for _, v, _ in table), default=6)
    print(f"{'function':<{width}}  {'figure':<{size}}  target")
    for function, figure, target in table:
        print(f"{function:<{width}}  {figure:<{size}}  {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
