"""What every CLI test asks of a run that must succeed."""

from __future__ import annotations

from typing import Any


def ok(result: Any) -> Any:
    """``result`` (a ``CliResult``), having exited 0 without a traceback; on
    failure the assertion shows the command and its output."""
    assert result.exit_code == 0, str(result)
    assert "Traceback" not in result.stderr, str(result)
    return result


def valid(schema: str, data: Any) -> Any:
    """``data``, having matched the JSON Schema ``relay/schemas/<schema>.json`` (its
    ``$ref`` resolved from the package, offline); on failure the assertion lists each error."""
    from relay.schemas import validator

    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator(schema).iter_errors(data)]
    assert errors == [], f"{schema}: {errors}"
    return data
