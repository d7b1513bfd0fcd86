"""``[intent]``: the optional classifier labels each reply through a real
chat-completions server on loopback; the rules stay what relay acts on and decide
alone when the server is away, slow or talks nonsense."""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from cli_checks import ok, valid
from engine_support import ChatServer, chat_server

from relay.channels.base import Inbound, Incoming
from relay.store import contacts
from relay.store.migrate import upgrade_url
from relay.testing import PHONE, Harness

KEY = "sk-intent-0123456789"


@pytest.fixture
def chat(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    yield from chat_server(monkeypatch, "RELAY_TEST_INTENT_KEY", KEY)


def settings(url: str, **extra: Any) -> dict[str, Any]:
    return {
        "intent.enabled": True,
        "intent.model": "small-model",
        "intent.timeout": "5s",
        "agent.openai.base_url": url,
        "agent.openai.model": "big-model",
        "agent.openai.api_key_env": "RELAY_TEST_INTENT_KEY",
        **extra,
    }


@pytest.fixture
def labelling(make_engine: Any, chat: ChatServer) -> Harness:
    return make_engine(**settings(chat.url))


def says(chat: ChatServer, content: Any) -> None:
    """Queue one answer whose message content is ``content`` (JSON-encoded unless text)."""
    text = content if isinstance(content, str) else json.dumps(content)
    message = {"role": "assistant", "content": text}
    chat.reply(200, {"id": "chatcmpl-1", "choices": [{"index": 0, "message": message}]})


def labels(engine: Harness, iid: str) -> list[tuple[str, str | None, str | None]]:
    return [
        (m.text, m.intent, m.intent_date.isoformat() if m.intent_date else None)
        for m in engine.relay.transcript(iid)
        if m.direction == "inbound"
    ]


def test_each_reply_is_labelled_stored_shown_and_counted(
    labelling: Harness, chat: ChatServer
) -> None:
    iid = labelling.start()
    labelling.tick()
    says(chat, {"label": "not_now", "date": "2026-12-01"})
    labelling.relay.receive(PHONE, "Busy this month, ask me again in December")
    # The daemon's path: a poll of the console inbox, labelled before it is stored.
    inbox = labelling.data_dir / "console-inbox.jsonl"
    inbox.write_text(json.dumps({"from": PHONE, "text": "Actually, tell me more"}) + "\n")
    says(chat, '```json\n{"label": "interested", "date": null}\n```')
    assert labelling.relay.poll("console").stored == 1

    assert labels(labelling, iid) == [
        ("Busy this month, ask me again in December", "not_now", "2026-12-01"),
        ("Actually, tell me more", "interested", None),
    ]
    first = chat.requests[0]
    assert first["path"] == "/v1/chat/completions"
    assert first["headers"]["Authorization"] == f"Bearer {KEY}"
    assert first["body"]["model"] == "small-model"  # [intent] model over [agent.openai]
    system, user = first["body"]["messages"]
    assert (
        "opt_out" in system["content"]
        and labelling.clock.now().date().isoformat() in (system["content"])
    )
    assert user == {"role": "user", "content": "Busy this month, ask me again in December"}
    shown = labelling.relay.transcript(iid)[-1].to_json()
    assert (shown["intent"], shown["intent_date"]) == ("interested", None)
    intents = labelling.relay.stats().to_json()["intents"]
    assert intents == {**dict.fromkeys(intents, 0), "not_now": 1, "interested": 1}
    assert labelling.relay.stats(campaign="none such").intents["interested"] == 0

    # A poll that reads the same message again stores it once and asks nothing.
    again = Inbound(PHONE, "Actually, tell me more", provider_message_id="console-again")
    says(chat, {"label": "interested"})
    labelling.relay.ingest("console", Incoming(messages=[again]))
    asked = len(chat.requests)
    labelling.relay.ingest("console", Incoming(messages=[again]))
    assert len(chat.requests) == asked


def test_a_rules_opt_out_is_labelled_without_a_call(labelling: Harness, chat: ChatServer) -> None:
    iid = labelling.start()
    labelling.tick()
    labelling.relay.receive(PHONE, "STOP")
    assert chat.requests == []
    assert labels(labelling, iid) == [("STOP", "opt_out", None)]
    assert labelling.relay.contact(PHONE).opted_out_at is not None


def test_an_opt_out_label_opts_the_contact_out(labelling: Harness, chat: ChatServer) -> None:
    iid = labelling.start()
    labelling.tick()
    says(chat, {"label": "opt_out"})
    message = labelling.relay.receive(PHONE, "xyzzy, and that is my final word")
    assert (message.status, message.intent) == ("processed", "opt_out")
    view = labelling.view(iid)
    assert (view.state, view.end_reason) == ("COMPLETED", "opted_out")
    with labelling.relay.store.read_transaction() as session:
        person = contacts.by_address(session, PHONE)
        assert person is not None and person.opt_out_reason == "intent opt_out on cli"


def test_the_rules_opt_in_word_wins_over_an_opt_out_label(
    labelling: Harness, chat: ChatServer
) -> None:
    labelling.start()
    labelling.tick()
    labelling.relay.receive(PHONE, "STOP")
    says(chat, {"label": "opt_out"})
    labelling.relay.receive(PHONE, "START")
    assert labelling.relay.contact(PHONE).opted_out_at is None


def test_with_opt_out_off_the_label_is_only_stored(make_engine: Any, chat: ChatServer) -> None:
    engine = make_engine(**settings(chat.url, **{"intent.opt_out": False}))
    iid = engine.start()
    engine.tick()
    says(chat, {"label": "opt_out"})
    assert engine.relay.receive(PHONE, "xyzzy").intent == "opt_out"
    assert engine.relay.contact(PHONE).opted_out_at is None
    assert engine.state(iid) != "COMPLETED"


def test_a_server_that_is_down_leaves_the_rules_alone(
    make_engine: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RELAY_TEST_INTENT_KEY", KEY)
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    engine = make_engine(**settings(f"http://127.0.0.1:{port}/v1"))
    iid = engine.start()
    engine.tick()
    with caplog.at_level(logging.WARNING, logger="relay.intent"):
        reply = engine.relay.receive(PHONE, "Thursday works")
        engine.relay.receive(PHONE, "STOP")
    assert reply.intent is None and reply.status in ("received", "processed")
    assert labels(engine, iid) == [("Thursday works", None, None), ("STOP", "opt_out", None)]
    assert engine.relay.contact(PHONE).opted_out_at is not None  # the rules decided
    [line] = [r for r in caplog.records if r.name == "relay.intent"]
    assert "cannot reach" in line.getMessage() and line.exc_info is None


def test_after_a_failure_the_classifier_rests_then_is_asked_again(
    labelling: Harness, chat: ChatServer, caplog: pytest.LogCaptureFixture
) -> None:
    iid = labelling.start()
    labelling.tick()
    chat.reply(500, {"error": {"message": "overloaded"}})
    with caplog.at_level(logging.WARNING, logger="relay.intent"):
        labelling.relay.receive(PHONE, "one")
        labelling.relay.receive(PHONE, "two")  # resting: not asked
    assert len(chat.requests) == 1
    assert "server error (HTTP 500): overloaded" in caplog.records[-1].getMessage()
    labelling.clock.advance(timedelta(minutes=2))
    says(chat, {"label": "other"})
    labelling.relay.receive(PHONE, "three")
    assert [i for _, i, _ in labels(labelling, iid)] == [None, None, "other"]


@pytest.mark.parametrize(
    "answer",
    [
        "They seem keen!",
        {"label": "enthusiastic"},
        {"mood": "interested"},
        '["interested"]',
    ],
)
def test_an_answer_that_is_no_label_leaves_it_null(
    labelling: Harness, chat: ChatServer, answer: Any, caplog: pytest.LogCaptureFixture
) -> None:
    iid = labelling.start()
    labelling.tick()
    says(chat, answer)
    with caplog.at_level(logging.WARNING, logger="relay.intent"):
        labelling.relay.receive(PHONE, "Thursday")
    assert labels(labelling, iid) == [("Thursday", None, None)]
    assert labelling.state(iid) == "WAITING_FOR_AGENT"  # the reply is answered as ever
    assert "not a label" in caplog.records[-1].getMessage()


def test_a_body_that_is_no_completion_leaves_it_null(labelling: Harness, chat: ChatServer) -> None:
    iid = labelling.start()
    labelling.tick()
    chat.reply(200, ["not", "a", "completion"])
    labelling.relay.receive(PHONE, "Thursday")
    assert labels(labelling, iid) == [("Thursday", None, None)]


def test_off_nothing_is_asked(make_engine: Any, chat: ChatServer) -> None:
    engine = make_engine(**settings(chat.url, **{"intent.enabled": False}))
    iid = engine.start()
    engine.tick()
    engine.relay.receive(PHONE, "Thursday")
    inbox = engine.data_dir / "console-inbox.jsonl"
    inbox.write_text(json.dumps({"from": PHONE, "text": "or Friday"}) + "\n")
    assert engine.relay.poll("console").stored == 1
    assert chat.requests == []
    assert [i for _, i, _ in labels(engine, iid)] == [None, None]
    assert engine.relay.stats().intents == dict.fromkeys(engine.relay.stats().intents, 0)


PROBE = """
import json, sys
from relay.cli.main import run
try:
    run(sys.argv[1:])
except SystemExit as exit:
    assert not exit.code, exit.code
print(json.dumps([n for n in ("httpx", "relay.agents.intent", "relay.engine.verbs.intents")
                  if n in sys.modules]), file=sys.stderr)
"""


def test_off_a_reply_loads_no_http_client(tmp_path: Path) -> None:
    """The disabled path costs nothing: ``relay receive`` imports neither httpx nor
    the classifier."""
    url = f"sqlite:///{tmp_path / 'relay.db'}"
    upgrade_url(url)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "--database", url, "receive", PHONE, "Thursday"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert json.loads(done.stderr.splitlines()[-1]) == []


def test_the_date_is_read_from_today(labelling: Harness, chat: ChatServer) -> None:
    labelling.start()
    labelling.tick()
    says(chat, {"label": "out_of_office", "date": "not a date"})
    message = labelling.relay.receive(PHONE, "Back next week")
    assert (message.intent, message.intent_date) == ("out_of_office", None)
    assert isinstance(labelling.clock.now().date(), date)


def test_the_cli_shows_and_counts_labels(labelling: Harness, chat: ChatServer, cli: Any) -> None:
    iid = labelling.start()
    labelling.tick()
    says(chat, {"label": "not_now", "date": "2026-12-01"})
    labelling.relay.receive(PHONE, "Ask me again in December")
    says(chat, {"label": "referral"})
    labelling.relay.receive(PHONE, "Or ask my colleague Ana")

    transcript = valid("transcript", ok(cli("transcript", iid, "--json")).json())
    assert [(m["intent"], m["intent_date"]) for m in transcript] == [
        (None, None),
        ("not_now", "2026-12-01"),
        ("referral", None),
    ]
    assert "not_now (2026-12-01)" in ok(cli("transcript", iid)).stdout
    stats = valid("stats", ok(cli("stats", "--json")).json())
    assert {k: v for k, v in stats["intents"].items() if v} == {"not_now": 1, "referral": 1}
    shown = ok(cli("stats")).stdout
    assert "not_now\t1\t50%" in shown and "referral\t1\t50%" in shown


def test_doctor_names_a_classifier_that_cannot_work(make_engine: Any) -> None:
    engine = make_engine(**{"intent.enabled": True})
    found = [(f.subject, f.problem) for f in engine.relay.check()]
    assert ("intent", "agent.openai.base_url is not set: add it to [agent.openai]") in found
    assert not [f for f in make_engine().relay.check() if f.subject == "intent"]


def test_a_server_that_does_not_answer_in_time_leaves_the_rules_alone(
    make_engine: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listening socket that never answers: the timeout (a fraction of a second
    here), then the rules alone, and the classifier rests."""
    monkeypatch.setenv("RELAY_TEST_INTENT_KEY", KEY)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        engine = make_engine(**settings(url, **{"intent.timeout": 0.3}))
        iid = engine.start()
        engine.tick()
        with caplog.at_level(logging.WARNING, logger="relay.intent"):
            engine.relay.receive(PHONE, "Thursday works")
            engine.relay.receive(PHONE, "Friday too")  # resting: no second wait
    assert labels(engine, iid) == [("Thursday works", None, None), ("Friday too", None, None)]
    [line] = [r for r in caplog.records if r.name == "relay.intent"]
    assert "did not answer within 0.3s" in line.getMessage()


def test_the_web_console_shows_a_label(labelling: Harness, chat: ChatServer) -> None:
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    from relay.console import app, pages

    iid = labelling.start()
    labelling.tick()
    says(chat, {"label": "not_now", "date": "2026-12-01"})
    labelling.relay.receive(PHONE, "Ask me again in December")
    templates = Environment(
        loader=FileSystemLoader(app.HERE / "templates"), autoescape=select_autoescape(["html"])
    )
    templates.globals.update(prefix=app.PREFIX, when=pages.when)
    context = pages.conversation(labelling.relay._rt, iid)
    html = templates.get_template("conversation.html").render(session=None, path="/", **context)
    assert '<span class="intent"' in html and "not_now (2026-12-01)</span>" in html


def test_a_batch_is_asked_about_in_parallel_and_a_failing_server_once(
    labelling: Harness, chat: ChatServer, caplog: pytest.LogCaptureFixture
) -> None:
    iid = labelling.start()
    labelling.tick()
    batch = [Inbound(PHONE, f"reply {n}", provider_message_id=f"b-{n}") for n in range(6)]
    for _ in batch:
        says(chat, {"label": "interested"})
    labelling.relay.ingest("console", Incoming(messages=batch))
    assert len(chat.requests) == 6
    assert {i for _, i, _ in labels(labelling, iid)} == {"interested"}

    more = [Inbound(PHONE, f"more {n}", provider_message_id=f"m-{n}") for n in range(6)]
    with caplog.at_level(logging.WARNING, logger="relay.intent"):
        labelling.relay.ingest("console", Incoming(messages=more))  # the server answers 500
    assert len(chat.requests) == 7  # the first failed: the rest were not asked
    assert len([r for r in caplog.records if r.name == "relay.intent"]) == 1
    assert [i for t, i, _ in labels(labelling, iid) if t.startswith("more")] == [None] * 6


def test_an_export_of_the_contact_carries_the_labels(labelling: Harness, chat: ChatServer) -> None:
    labelling.start()
    labelling.tick()
    says(chat, {"label": "not_now", "date": "2026-12-01"})
    labelling.relay.receive(PHONE, "Ask me again in December")
    export = json.loads(json.dumps(labelling.relay.export_contact(PHONE)))
    valid("contact-export", {"schema_version": 1, **export})
    [reply] = [m for m in export["messages"] if m["direction"] == "inbound"]
    assert (reply["intent"], reply["intent_date"]) == ("not_now", "2026-12-01")
