"""The daemon's JSON log: the instance id is a field the logging code sets."""

from __future__ import annotations

import json
import logging

from relay.runner.logs import JsonFormatter


def _line(message: str, *args: object, **extra: object) -> dict[str, object]:
    record = logging.LogRecord("relay.state", logging.INFO, __file__, 1, message, args, None)
    record.__dict__.update(extra)
    return json.loads(JsonFormatter().format(record))


def test_the_instance_id_is_the_field_the_call_site_set() -> None:
    line = _line("instance %s: sent", "r7k2ab", instance_id="r7k2ab")
    assert line["instance_id"] == "r7k2ab"
    assert line["message"] == "instance r7k2ab: sent"


def test_an_id_in_the_text_alone_is_not_taken_for_one() -> None:
    """Contact text can look like anything; only the call site says which instance."""
    assert "instance_id" not in _line("instance r7k2ab: the contact wrote 'instance x1'")
