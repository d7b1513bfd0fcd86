"""The lifecycle commands through Typer's runner, on SQLite and PostgreSQL.

``relay start`` runs the first agent turn unless ``--defer`` is given; these
tests defer, so an instance stays CREATED until a test moves it.
"""

from __future__ import annotations

import re
import sys
import tomllib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cli_checks import ok

from relay.core.states import Event

Cli = Callable[..., Any]
PHONE = "+15551230001"
START = ("start", "+1 555 123 0001", "--objective", "Confirm the delivery date", "--defer")
ISO_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
BOX_DRAWING = re.compile("[\u2500-\u257f]")
ANSI = re.compile("\x1b\\[")
INSTANCE_FIELDS = {
    "id",
    "contact",
    "state",
    "previous_state",
    "objective",
    "todos",
    "follow_up_count",
    "max_followups",
    "failure_reason",
    "created_at",
    "updated_at",
}


def fails(result: Any, code: int, *fragments: str) -> str:
    """Assert a one-line error on stderr with the given exit code; returns the line."""
    assert result.exit_code == code, str(result)
    assert result.stderr.startswith("relay: error: "), str(result)
    assert result.stderr.count("\n") == 1, str(result)
    assert "Traceback" not in result.stderr + result.stdout
    for fragment in fragments:
        assert fragment in result.stderr, str(result)
    return result.stderr.strip()


def start(cli: Cli, *extra: str, contact: str = "+1 555 123 0001") -> dict[str, Any]:
    args = ("start", contact, "--objective", "Confirm the delivery date", "--defer")
    return ok(cli(*args, "--todo", "Ask for the date", *extra, "--json")).json()


def check_instance_json(data: dict[str, Any]) -> None:
    assert set(data) >= INSTANCE_FIELDS
    assert isinstance(data["id"], str) and data["id"]
    assert isinstance(data["follow_up_count"], int)
    assert isinstance(data["max_followups"], int)
    for todo in data["todos"]:
        assert set(todo) >= {"id", "text", "status"}
        assert isinstance(todo["id"], int)
    for key in ("created_at", "updated_at"):
        assert ISO_UTC.match(data[key]), data[key]
        moment = datetime.fromisoformat(data[key].replace("Z", "+00:00"))
        assert abs(datetime.now(UTC) - moment) < timedelta(minutes=5)


@pytest.fixture
def api(make_relay: Callable[..., Any], db_url: str) -> Any:
    """The Python API on the CLI's database, to reach states no CLI verb reaches."""
    return make_relay(db_url)


# -- start ----------------------------------------------------------------------------------------


def test_start_prints_the_id_and_state(cli: Cli) -> None:
    result = ok(cli(*START, "--todo", "Ask for the date"))
    instance_id, state = result.stdout.split()
    assert state == "CREATED"
    assert re.fullmatch(r"[a-z0-9]{4,}", instance_id)
    result = ok(cli("start", PHONE, "-o", "Another", "-t", "One", "--defer"))
    assert result.stdout.split()[1] == "QUEUED"


def test_start_json_has_the_documented_fields(cli: Cli) -> None:
    data = start(cli, "--todo", "Confirm the address", "--heartbeat", "2h", "--max-followups", "3")
    check_instance_json(data)
    assert data["contact"] == PHONE
    assert data["state"] == "CREATED"
    assert data["previous_state"] is None
    assert data["objective"] == "Confirm the delivery date"
    assert [{k: t[k] for k in ("id", "text", "status")} for t in data["todos"]] == [
        {"id": 1, "text": "Ask for the date", "status": "pending"},
        {"id": 2, "text": "Confirm the address", "status": "pending"},
    ]
    assert (data["follow_up_count"], data["max_followups"]) == (0, 3)
    assert data["heartbeat_seconds"] == 7200
    assert data["failure_reason"] is None


def test_start_defaults(cli: Cli) -> None:
    data = start(cli)
    assert (data["max_followups"], data["heartbeat_seconds"]) == (5, 1800)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("start", "not-a-contact", "-o", "o", "-t", "t", "--defer"), "invalid contact"),
        (("start", "ann@", "-o", "o", "-t", "t", "--defer"), "invalid email"),
        (("start", "123", "-o", "o", "-t", "t", "--defer"), "invalid phone number"),
        (("start", PHONE, "-o", "o", "-t", "t", "--heartbeat", "5x", "--defer"), "duration"),
        (("start", PHONE, "-o", "o", "-t", "t", "--heartbeat", "0s", "--defer"), "duration"),
        (("start", PHONE, "-o", " ", "-t", "t", "--defer"), "objective"),
        (("start", PHONE, "-o", "o", "-t", "t", "--max-followups", "-1", "--defer"), "followups"),
    ],
)
def test_start_refuses_bad_input_with_exit_2(cli: Cli, args: tuple, fragment: str) -> None:
    fails(cli(*args), 2, fragment)
    assert ok(cli("list", "--json")).json() == []


def test_usage_errors_exit_2(cli: Cli) -> None:
    assert cli("start", PHONE, "-t", "t").exit_code == 2  # no --objective
    assert cli("list", "--limit", "many").exit_code == 2
    assert cli("no-such-command").exit_code == 2


# -- list -----------------------------------------------------------------------------------------


def test_list_plain_and_json(cli: Cli) -> None:
    first = start(cli)
    second = start(cli)
    other = start(cli, contact="ann@example.com")
    lines = ok(cli("list")).stdout.splitlines()
    assert lines[0].split("\t")[:3] == ["id", "contact", "state"]
    assert [line.split("\t")[0] for line in lines[1:]] == [other["id"], second["id"], first["id"]]
    assert lines[2].split("\t")[2] == "QUEUED"

    data = ok(cli("list", "--json")).json()
    assert [d["id"] for d in data] == [other["id"], second["id"], first["id"]]
    for item in data:
        check_instance_json(item)
    assert [d["id"] for d in ok(cli("list", "--state", "queued", "--json")).json()] == [
        second["id"]
    ]
    by_contact = ok(cli("list", "--contact", "(555) 123-0001", "--json")).json()
    assert [d["id"] for d in by_contact] == [second["id"], first["id"]]
    assert [d["id"] for d in ok(cli("list", "--limit", "1", "--json")).json()] == [other["id"]]


def test_list_refuses_a_bad_state_name(cli: Cli) -> None:
    fails(cli("list", "--state", "RUNNING"), 2, "unknown state 'RUNNING'", "WAITING_FOR_REPLY")
    fails(cli("list", "--contact", "nobody"), 2, "invalid contact")


# -- show -----------------------------------------------------------------------------------------


def test_show_plain(cli: Cli) -> None:
    data = start(cli, "--todo", "Confirm the address", "--max-followups", "4")
    out = ok(cli("show", data["id"])).stdout
    fields = dict(re.split(r"\s{2,}", line, maxsplit=1) for line in out.splitlines()[:8])
    assert fields["id"] == data["id"]
    assert fields["contact"] == PHONE
    assert fields["state"] == "CREATED"
    assert fields["objective"] == "Confirm the delivery date"
    assert fields["follow-ups"] == "0/4"
    assert "todos:" in out
    assert "[ ] 1. Ask for the date" in out and "[ ] 2. Confirm the address" in out
    assert "previous state" not in out


def test_show_a_paused_instance_names_its_prior_state(cli: Cli) -> None:
    data = start(cli)
    ok(cli("pause", data["id"]))
    out = ok(cli("show", data["id"][:5])).stdout
    assert re.search(r"^state\s+PAUSED$", out, re.M)
    assert re.search(r"^previous state\s+CREATED$", out, re.M)
    shown = ok(cli("show", data["id"], "--json")).json()
    assert (shown["state"], shown["previous_state"]) == ("PAUSED", "CREATED")


def test_show_json_of_a_cancelled_instance(cli: Cli) -> None:
    data = start(cli)
    ok(cli("cancel", data["id"]))
    shown = ok(cli("show", data["id"], "--json")).json()
    check_instance_json(shown)
    assert (shown["state"], shown["failure_reason"]) == ("FAILED", "cancelled")
    assert re.search(r"^failure reason\s+cancelled$", ok(cli("show", data["id"])).stdout, re.M)


def test_unknown_and_ambiguous_ids_exit_2(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = iter(["abc2345", "abc6789"])
    monkeypatch.setattr("relay.engine.verbs.starting.new_instance_id", lambda: next(ids))
    start(cli)
    start(cli, contact="ann@example.com")
    for command in ("show", "pause", "resume", "cancel", "transcript", "history"):
        fails(cli(command, "abc"), 2, "ambiguous")
        fails(cli(command, "zzz"), 2, "no instance matches 'zzz'")
    fails(cli("send", "abc", "hi"), 2, "ambiguous")
    assert ok(cli("show", "abc6", "--json")).json()["id"] == "abc6789"


# -- pause / resume / cancel ----------------------------------------------------------------------


def test_pause_resume_cancel(cli: Cli) -> None:
    data = start(cli)
    iid = data["id"]
    assert ok(cli("pause", iid, "--reason", "holiday")).stdout == f"{iid} PAUSED (was CREATED)\n"
    assert ok(cli("resume", iid)).stdout == f"{iid} CREATED\n"
    paused = ok(cli("pause", iid, "--json")).json()
    assert (paused["state"], paused["previous_state"]) == ("PAUSED", "CREATED")
    resumed = ok(cli("resume", iid, "--json")).json()
    assert (resumed["state"], resumed["previous_state"]) == ("CREATED", None)
    cancelled = ok(cli("cancel", iid, "--reason", "wrong person", "--json")).json()
    assert (cancelled["state"], cancelled["failure_reason"]) == ("FAILED", "cancelled")
    history = ok(cli("history", iid, "--json")).json()
    assert [h["event"] for h in history] == [
        "start", "pause", "resume", "pause", "resume", "cancel"
    ]  # fmt: skip
    assert history[1]["reason"] == "holiday" and history[-1]["reason"] == "wrong person"


def test_refusals_exit_1_naming_the_state_and_the_allowed_events(cli: Cli) -> None:
    start(cli)
    queued = start(cli)
    line = fails(cli("resume", queued["id"]), 1, "QUEUED", "resume")
    assert "pause" in line and "cancel" in line
    ok(cli("pause", queued["id"]))
    fails(cli("pause", queued["id"]), 1, "PAUSED", "resume", "cancel")
    ok(cli("cancel", queued["id"]))
    fails(cli("cancel", queued["id"]), 1, "FAILED", "cancel")
    fails(cli("resume", queued["id"]), 1, "FAILED")


def test_needs_human_intervention_resumes_to_active(cli: Cli, api: Any, drive: Any) -> None:
    data = start(cli)
    drive(api, data["id"], Event.REQUEST_INTERVENTION)
    assert ok(cli("resume", data["id"], "--json")).json()["state"] == "ACTIVE"


def test_cancelling_the_holder_promotes_the_next_in_line(cli: Cli) -> None:
    first, second, third = start(cli), start(cli), start(cli)
    ok(cli("pause", second["id"]))
    ok(cli("cancel", first["id"]))
    states = {d["id"]: d["state"] for d in ok(cli("list", "--json")).json()}
    assert states == {first["id"]: "FAILED", second["id"]: "PAUSED", third["id"]: "CREATED"}


# -- send / receive / transcript ------------------------------------------------------------------


def test_send_records_an_operator_message(cli: Cli) -> None:
    data = start(cli)
    result = ok(cli("send", data["id"], "Hello from a person"))
    assert re.match(r"^(sent to|queued for) \+15551230001 \(message \d+", result.stdout)
    transcript = ok(cli("transcript", data["id"], "--json")).json()
    assert [(m["author"], m["direction"], m["text"]) for m in transcript] == [
        ("operator", "outbound", "Hello from a person")
    ]
    assert ISO_UTC.match(transcript[0]["created_at"])
    lines = ok(cli("transcript", data["id"])).stdout.splitlines()
    assert lines[0].split("\t") == ["#", "time", "from", "channel", "status", "text"]
    assert lines[1].split("\t")[2:6:3] == ["operator", "Hello from a person"]


def test_send_on_a_finished_conversation_is_refused(cli: Cli) -> None:
    data = start(cli)
    ok(cli("cancel", data["id"]))
    fails(cli("send", data["id"], "hello?"), 1, "FAILED")
    assert ok(cli("transcript", data["id"], "--json")).json() == []


def test_send_from_needs_human_intervention_moves_on(cli: Cli, api: Any, drive: Any) -> None:
    data = start(cli)
    drive(api, data["id"], Event.AGENT_SENDS_FIRST_MESSAGE, Event.REQUEST_INTERVENTION)
    message = ok(cli("send", data["id"], "I'll take it from here", "--json")).json()
    assert (message["author"], message["instance_id"]) == ("operator", data["id"])
    assert ok(cli("show", data["id"], "--json")).json()["state"] == "WAITING_FOR_REPLY"
    events = [h["event"] for h in ok(cli("history", data["id"], "--json")).json()]
    assert events[-2:] == ["manual_send", "message_sent"]


def test_receive_routes_or_keeps_the_message(cli: Cli, api: Any, drive: Any) -> None:
    result = ok(cli("receive", "+1 555 999 0000", "Who is this?"))
    assert "no live instance (kept)" in result.stdout
    data = start(cli)
    drive(api, data["id"], Event.AGENT_SENDS_FIRST_MESSAGE, Event.MESSAGE_SENT)
    message = ok(cli("receive", "555-123-0001", "Tuesday works", "--json")).json()
    assert message["instance_id"] == data["id"]
    assert (message["direction"], message["author"]) == ("inbound", "contact")
    assert ok(cli("show", data["id"], "--json")).json()["state"] == "WAITING_FOR_AGENT"
    assert ok(cli("status", "--json")).json()["unrouted_inbound"] == 1
    fails(cli("receive", "nobody", "hi"), 2, "invalid contact")


def test_a_reply_to_a_paused_instance_waits_for_resume(cli: Cli, api: Any, drive: Any) -> None:
    data = start(cli)
    drive(api, data["id"], Event.AGENT_SENDS_FIRST_MESSAGE, Event.MESSAGE_SENT)
    ok(cli("pause", data["id"]))
    result = ok(cli("receive", PHONE, "Back now"))
    assert f"instance {data['id']}" in result.stdout
    assert ok(cli("show", data["id"], "--json")).json()["state"] == "PAUSED"
    assert ok(cli("resume", data["id"], "--json")).json()["state"] == "WAITING_FOR_AGENT"


# -- history / status -----------------------------------------------------------------------------


def test_history_plain_and_json(cli: Cli) -> None:
    start(cli)
    queued = start(cli)
    lines = ok(cli("history", queued["id"])).stdout.splitlines()
    assert lines[0].split("\t") == ["time", "from", "to", "event", "actor", "reason"]
    assert lines[1].split("\t")[1:4] == ["-", "CREATED", "start"]
    assert lines[2].split("\t")[1:4] == ["CREATED", "QUEUED", "contact_has_active_instance"]
    rows = ok(cli("history", queued["id"], "--json")).json()
    assert [set(r) for r in rows] == [
        {"instance_id", "from_state", "to_state", "event", "actor", "reason", "at", "kind", "args"}
        | {"schema_version"}
    ] * 2
    assert all(ISO_UTC.match(r["at"]) for r in rows)


def test_status_plain_and_json(cli: Cli) -> None:
    data = start(cli)
    start(cli)
    ok(cli("receive", "+15559990000", "hello?"))
    status = ok(cli("status", "--json")).json()
    assert status["states"]["CREATED"] == 1 and status["states"]["QUEUED"] == 1
    assert set(status["states"]) == {
        "CREATED", "QUEUED", "ACTIVE", "WAITING_FOR_REPLY", "WAITING_FOR_AGENT",
        "HEARTBEAT_SCHEDULED", "PAUSED", "NEEDS_HUMAN_INTERVENTION", "COMPLETED",
        "ABANDONED", "FAILED",
    }  # fmt: skip
    assert status["queue_depth"] == 1
    assert status["unrouted_inbound"] == 1
    assert status["outbox_pending"] == 0
    assert status["last_daemon_seen"] is None
    out = ok(cli("status")).stdout
    assert "QUEUED\t1" in out
    assert re.search(r"^queue depth\s+1$", out, re.M)
    assert re.search(r"^unrouted inbound\s+1$", out, re.M)
    assert re.search(r"^last daemon seen\s+never$", out, re.M)
    ok(cli("cancel", data["id"]))
    assert ok(cli("status", "--json")).json()["states"]["FAILED"] == 1


# -- output ---------------------------------------------------------------------------------------


def test_piped_output_is_plain_text(cli: Cli) -> None:
    data = start(cli)
    ok(cli("send", data["id"], "hi"))
    for args in (
        ["list"],
        ["show", data["id"]],
        ["transcript", data["id"]],
        ["history", data["id"]],
        ["status"],
        ["config", "show"],
        ["pause", data["id"]],
    ):
        out = ok(cli(*args)).stdout
        assert out.strip(), args
        assert not BOX_DRAWING.search(out), (args, out)
        assert not ANSI.search(out), (args, out)


def test_a_terminal_gets_rich_tables(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """The counterpart of the test above: the plain form is chosen because of the pipe."""
    from relay.cli import render

    start(cli)
    monkeypatch.setattr(render, "is_terminal", lambda: True)
    monkeypatch.setattr(render, "_console", None)
    out = ok(cli("list")).stdout
    assert BOX_DRAWING.search(out)


def test_no_color_is_respected(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    from relay.cli import render

    monkeypatch.setattr(render, "_console", None)
    assert render.console().no_color is True  # NO_COLOR=1 from the autouse fixture
    monkeypatch.setattr(render, "_console", None)
    monkeypatch.delenv("NO_COLOR")
    assert render.console().no_color is False

    monkeypatch.setattr(render, "_console", None)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setattr(render, "is_terminal", lambda: True)
    start(cli)
    out = ok(cli("status")).stdout
    assert not re.search("\x1b\\[[0-9;]*(3[0-9]|4[0-9]|9[0-7])(;[0-9;]*)?m", out), repr(out)


def test_version(run_cli: Cli) -> None:
    from relay import __version__

    assert ok(run_cli("--version")).stdout == f"relay {__version__}\n"


# -- init and configuration -----------------------------------------------------------------------


def test_init_writes_a_config_and_creates_the_default_database(run_cli: Cli) -> None:
    from relay.config import DEFAULTS

    result = ok(run_cli("init"))
    assert "wrote relay.toml" in result.stdout
    config = Path("relay.toml")
    assert config.is_file()
    assert Path(".relay", "relay.db").is_file()
    written = tomllib.loads(config.read_text())
    flat = {f"{section}.{key}": value for section, keys in written.items()
            for key, value in keys.items() if not isinstance(value, dict)}  # fmt: skip
    assert flat, "relay.toml has no settings"
    for key, value in flat.items():
        assert key in DEFAULTS, key
        assert value == DEFAULTS[key], key
    assert ok(run_cli("list", "--json")).json() == []


def test_init_refuses_to_overwrite_without_force(run_cli: Cli) -> None:
    ok(run_cli("init"))
    Path("relay.toml").write_text('[defaults]\nheartbeat = "1h"\n')
    fails(run_cli("init"), 2, "relay.toml exists", "--force")
    assert Path("relay.toml").read_text() == '[defaults]\nheartbeat = "1h"\n'
    ok(run_cli("init", "--force"))
    assert "[database]" in Path("relay.toml").read_text()


def test_init_in_another_directory(run_cli: Cli) -> None:
    ok(run_cli("init", "projects/outreach"))
    assert Path("projects/outreach/relay.toml").is_file()
    assert Path("projects/outreach/.relay/relay.db").is_file()


def test_init_with_a_configured_database(cli: Cli, db_url: str) -> None:
    result = ok(cli("init"))
    assert Path("relay.toml").is_file()
    assert not Path(".relay", "relay.db").exists()
    assert ok(cli("list", "--json")).json() == []
    assert "database:" in result.stdout


def test_config_show_names_where_each_value_came_from(
    run_cli: Cli, db_url: str, tmp_path: Path
) -> None:
    Path("relay.toml").write_text('[defaults]\nheartbeat = "1h"\n')
    env = {"RELAY_DEFAULTS_MAX_FOLLOWUPS": "3", "RELAY_DATABASE_URL": "sqlite:///ignored.db"}
    result = ok(run_cli("--database", db_url, "config", "show", "--json", env=env))
    data = result.json()
    values = data["values"]
    config_path = str((tmp_path / "relay.toml").resolve())
    assert data["config_file"] == config_path
    assert values["defaults.heartbeat"] == {"value": "1h", "source": config_path}
    assert values["defaults.max_followups"] == {
        "value": 3,
        "source": "env RELAY_DEFAULTS_MAX_FOLLOWUPS",
    }
    assert values["database.url"] == {"value": db_url, "source": "flag"}
    assert values["agent.backend"] == {"value": "scripted", "source": "default"}

    lines = ok(run_cli("--database", db_url, "config", "show", env=env)).stdout.splitlines()
    rows = {line.split("\t")[0]: line.split("\t")[1:] for line in lines if "\t" in line}
    assert rows["defaults.heartbeat"] == ["'1h'", config_path]
    assert rows["defaults.max_followups"] == ["3", "env RELAY_DEFAULTS_MAX_FOLLOWUPS"]
    assert rows["database.url"][1] == "flag"
    assert rows["agent.backend"] == ["'scripted'", "default"]


def test_flags_override_env_which_overrides_the_file(run_cli: Cli, db_url: str) -> None:
    Path("relay.toml").write_text(
        '[defaults]\nmax_followups = 2\n[database]\nurl = "sqlite:///nowhere/x.db"\n'
    )
    data = ok(
        run_cli(
            "start", PHONE, "-o", "o", "-t", "t", "--defer", "--json",
            env={"RELAY_DEFAULTS_MAX_FOLLOWUPS": "4", "RELAY_DATABASE_URL": db_url},
        )
    ).json()  # fmt: skip
    assert data["max_followups"] == 4
    data = ok(
        run_cli(
            "--database", db_url, "start", "+15551230002", "-o", "o", "-t", "t",
            "--max-followups", "7", "--defer", "--json",
        )
    ).json()  # fmt: skip
    assert data["max_followups"] == 7
    assert not Path("nowhere").exists()


def test_a_malformed_config_file_exits_2(cli: Cli) -> None:
    Path("relay.toml").write_text("[defaults\nheartbeat = \n")
    fails(cli("list"), 2, "relay.toml", "invalid TOML")
    fails(cli("status", "--json"), 2, "invalid TOML")


def test_bad_configuration_values_exit_2(cli: Cli) -> None:
    bad_number = {"RELAY_DEFAULTS_MAX_FOLLOWUPS": "many"}
    fails(cli("list", env=bad_number), 2, "RELAY_DEFAULTS_MAX_FOLLOWUPS")
    fails(cli("--config", "missing.toml", "list"), 2, "missing.toml")
    fails(cli("list", env={"RELAY_CONFIG": "missing.toml"}), 2, "missing.toml")
    Path("relay.toml").write_text('[defaults]\nheartbeat = "often"\n')
    fails(cli("start", PHONE, "-o", "o", "-t", "t", "--defer"), 2, "duration")


def test_an_explicit_config_file(run_cli: Cli, db_url: str) -> None:
    Path("elsewhere").mkdir()
    Path("elsewhere/relay.toml").write_text(f'[database]\nurl = "{db_url}"\n')
    data = ok(run_cli("--config", "elsewhere/relay.toml", "config", "show", "--json")).json()
    assert data["database_url"] == db_url
    assert data["values"]["database.url"]["source"].endswith("elsewhere/relay.toml")
    ok(run_cli("-c", "elsewhere/relay.toml", "start", PHONE, "-o", "o", "-t", "t", "--defer"))
    assert len(ok(run_cli("-c", "elsewhere/relay.toml", "list", "--json")).json()) == 1


def test_a_postgresql_url_without_its_driver_names_the_extra(
    run_cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL support is the ``postgres`` extra: without psycopg, one line says
    how to install it, with the exit code of a configuration error."""
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg raises ImportError
    result = run_cli("--database", "postgresql://relay@127.0.0.1:1/relay", "list")
    fails(result, 2, "pip install 'relay-outreach[postgres]'")
