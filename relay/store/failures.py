"""A database failure as one line a person (or a program) can read."""

from __future__ import annotations


def database_line(exc: BaseException) -> str:
    """``database error: <the driver's first line>`` (no SQL, no traceback)."""
    orig = getattr(exc, "orig", None)
    detail = str(orig or exc).strip().splitlines()[0] if str(orig or exc).strip() else ""
    return f"database error: {detail or type(exc).__name__}"
