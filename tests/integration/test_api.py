"""The public Python API (``relay.api``): the front door a program uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import relay.api as api
from relay.api import Relay


def _config(tmp_path: Path, db_url: str) -> Path:
    path = tmp_path / "relay.toml"
    path.write_text(f'[database]\nurl = "{db_url}"\n[channels.console]\necho = false\n')
    return path


def test_open_start_run_due_transcript_close(tmp_path: Path, db_url: str, clock: Any) -> None:
    with Relay.open(_config(tmp_path, db_url), clock=clock) as relay:
        started = relay.start("+1 555 123 0001", "Confirm the delivery", ["Which day?"])
        assert started.state == "WAITING_FOR_REPLY"
        assert started.first_message_status == "sent"
        assert started.first_message
        relay.receive("+15551230001", "Thursday")
        report = relay.run_due(poll=False)
        assert [t.instance_id for t in report.turns] == [started.id]
        texts = [m.text for m in relay.transcript(started.id)]
        assert texts[1] == "Thursday" and len(texts) == 3
        assert relay.instance(started.id).id == started.id
        assert [v.id for v in relay.instances()] == [started.id]
        assert relay.check() == []


def test_start_can_defer_the_first_turn(tmp_path: Path, db_url: str, clock: Any) -> None:
    with Relay.open(_config(tmp_path, db_url), clock=clock) as relay:
        view = relay.start("+15551230001", "Confirm", ["Ask"], defer=True)
        assert (view.state, view.first_message_status) == ("CREATED", None)
        assert "first_message" not in view.to_json()
        relay.run_due()
        assert relay.instance(view.id).state == "WAITING_FOR_REPLY"


def test_errors_speak_the_domain(tmp_path: Path, db_url: str) -> None:
    with (
        Relay.open(_config(tmp_path, db_url)) as relay,
        pytest.raises(api.InvalidInput, match="max_followups must be between"),
    ):
        relay.start("+15551230001", "Confirm", ["Ask"], max_followups=-1)


def test_all_names_the_api() -> None:
    for name in api.__all__:
        assert hasattr(api, name), name
    assert {"Relay", "InstanceView", "RelayError", "Refused"} <= set(api.__all__)
