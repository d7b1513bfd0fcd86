"""``[[notify]]``: a webhook or a command told when a conversation needs a person or
ends, at least once, in order, with an event id and an HMAC signature."""

from __future__ import annotations

import hashlib
import hmac
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from relay.core.errors import ConfigError
from relay.engine.verbs.notify import notify_due, targets

PHONE = "+15551230001"


def _relay(make_relay: Any, db_url: str, clock: Any, notify: list[dict[str, Any]]) -> Any:
    return make_relay(db_url, clock, **{"channels.console.echo": False, "notify": notify})


def test_a_webhook_hears_needs_human_once_signed_and_after_a_failure(
    make_relay: Any, db_url: str, clock: Any, drive: Any, http_endpoint: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RELAY_TEST_NOTIFY_SECRET", "s3cret")
    target = {"url": http_endpoint.url("/hook"), "events": ["needs_human", "done"],
              "secret_env": "RELAY_TEST_NOTIFY_SECRET"}
    relay = _relay(make_relay, db_url, clock, [target])
    iid = relay.start(PHONE, "Confirm", ["Which day?"], meta={"ticket": "T-9"}).id
    drive(relay, iid, "agent_sends_first_message", "request_intervention")

    http_endpoint.reply(503)
    assert notify_due(relay) == 0  # down: nothing skipped, retried on the next poll
    http_endpoint.reply(200)
    assert notify_due(relay) == 1
    assert notify_due(relay) == 0  # the position moved past it

    first, second = http_endpoint.requests
    assert first.body == second.body  # the same event again, not a later one
    body = second.json()
    assert (body["topic"], body["instance_id"]) == ("needs_human", iid)
    assert body["meta"] == {"ticket": "T-9"}
    assert second.headers["X-Relay-Event-Id"] == str(body["id"])
    stamp = second.headers["X-Relay-Timestamp"]
    expected = hmac.new(b"s3cret", stamp.encode() + b"." + second.body, hashlib.sha256)
    assert second.headers["X-Relay-Signature"] == f"sha256={expected.hexdigest()}"

    relay.cancel(iid)  # a cancel ends it: "done" (the operator's own doing, not "failed")
    http_endpoint.reply(200)
    assert notify_due(relay) == 1
    assert http_endpoint.requests[-1].json()["data"]["to"] == "FAILED"


def test_a_command_gets_each_chosen_event_as_json_on_stdin(
    make_relay: Any, db_url: str, clock: Any, drive: Any, tmp_path: Path
) -> None:
    out = tmp_path / "seen.jsonl"
    script = tmp_path / "hook.py"
    script.write_text(
        "import sys\n"
        f"open({str(out)!r}, 'a').write(sys.stdin.read() + '\\n')\n"
    )
    relay = _relay(make_relay, db_url, clock,
                   [{"command": [sys.executable, str(script)], "events": ["reply"]}])
    iid = relay.start(PHONE, "Confirm", ["Which day?"]).id
    drive(relay, iid, "agent_sends_first_message", "message_sent")
    relay.receive(PHONE, "Thursday")

    assert notify_due(relay) == 1
    (line,) = out.read_text().splitlines()
    assert (json.loads(line)["topic"], json.loads(line)["instance_id"]) == ("reply", iid)


def test_a_draft_reaches_the_targets_that_asked_for_drafts(
    make_relay: Any, db_url: str, clock: Any, tmp_path: Path
) -> None:
    from relay.engine.verbs import drafts
    from relay.runner.pulse import Pulse

    out = tmp_path / "seen.jsonl"
    script = tmp_path / "hook.py"
    script.write_text(f"import sys\nopen({str(out)!r}, 'a').write(sys.stdin.read() + '\\n')\n")
    relay = _relay(make_relay, db_url, clock,
                   [{"command": [sys.executable, str(script)], "events": ["draft"]}])  # fmt: skip
    iid = relay.start(PHONE, "Confirm", ["Which day?"], approval="all").id
    Pulse(relay, "test").run()
    (draft,) = drafts.pending(relay)
    drafts.approve(relay, draft.id, actor="ann")  # what became of it is no news
    assert notify_due(relay) == 1
    (line,) = out.read_text().splitlines()
    seen = json.loads(line)
    assert (seen["topic"], seen["instance_id"], seen["kind"]) == ("draft", iid, "draft")
    assert seen["data"]["message_id"] == draft.id


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"events": ["done"]}, "url or command"),
        ({"url": "ftp://x", "events": ["done"]}, "http"),
        ({"url": "http://x", "events": ["sometimes"]}, "events must be"),
        ({"url": "http://x", "secret": "plain"}, "unknown key"),
    ],
)
def test_bad_notify_tables_name_the_problem(raw: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        targets([raw])
