"""What a hostile tester found (issue 8, items 11-20), driven through the real CLI."""

from __future__ import annotations

import io
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from sqlalchemy import create_engine, text

from relay.agents.base import AgentError, make_agent
from relay.cli import render
from relay.core.optout import is_opt_out
from relay.core.secrets import is_secret_key, mask_text, mask_url
from relay.core.turns import TurnReason
from relay.store.database import HEAD_REVISION, normalise_url

PHONE = "+15551230001"
CARD = "4111 1111 1111 1111"
Cli = Callable[..., Any]


def start(cli: Cli, contact: str = PHONE) -> str:
    made = cli("start", contact, "-o", "the delivery", "-t", "Which day?", "--json")
    assert made.exit_code == 0, made
    return str(made.json()["id"])


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


# -- 11: secrets ---------------------------------------------------------------------------


def test_config_show_masks_passwords_in_urls(run_cli: Cli) -> None:
    Path("relay.toml").write_text(
        '[channels.hook]\ntype = "webhook"\nurl = "https://u:s3cret@hooks.example/x?token=abc"\n'
    )
    url = "postgresql://relay:hunter2@db.example:5432/relay"
    shown = run_cli("--database", url, "config", "show")
    as_json = run_cli("--database", url, "config", "show", "--json")
    for result in (shown, as_json):
        assert result.exit_code == 0, result
        assert "hunter2" not in result.stdout and "s3cret" not in result.stdout
        assert "abc" not in result.stdout
    assert "postgresql://relay:***@db.example:5432/relay" in shown.stdout
    assert as_json.json()["database_url"] == "postgresql://relay:***@db.example:5432/relay"


def test_errors_do_not_print_database_passwords(run_cli: Cli) -> None:
    result = run_cli("--database", "postgresql://relay:hunter2@127.0.0.1:1/relay", "list")
    assert result.exit_code == 2
    assert "hunter2" not in result.stderr and "hunter2" not in result.stdout


def test_a_literal_secret_in_relay_toml_is_refused(run_cli: Cli) -> None:
    Path("relay.toml").write_text('[channels.email]\npassword = "pw"\n')
    result = run_cli("config", "show")
    assert result.exit_code == 2
    assert "channels.email.password" in result.stderr
    assert 'use password_env = "NAME_OF_VARIABLE"' in result.stderr
    assert "pw\n" not in result.stderr


def test_the_secret_helpers() -> None:
    assert mask_url("postgresql://u:p@host/db") == "postgresql://u:***@host/db"
    assert mask_url("https://h/x?api_key=k&a=1") == "https://h/x?api_key=***&a=1"
    assert mask_text("at postgresql+psycopg://u:pw@h/db failed") == (
        "at postgresql+psycopg://u:***@h/db failed"
    )
    assert [
        is_secret_key(k) for k in ("agent.openai.api_key", "x.password_env", "x.auth_token")
    ] == [
        True,
        False,
        True,
    ]


# -- 12: file permissions ----------------------------------------------------------------


def test_init_and_start_create_owner_only_files(run_cli: Cli, umask_022: None) -> None:
    assert run_cli("init").exit_code == 0
    assert run_cli("start", PHONE, "-o", "x", "-t", "y").exit_code == 0
    data = Path(".relay")
    assert (data.stat().st_mode & 0o777) == 0o700
    for name in ("relay.db", "console.jsonl"):
        assert ((data / name).stat().st_mode & 0o777) == 0o600, name
    assert (Path("relay.toml").stat().st_mode & 0o077) == 0


# -- 13: logs ------------------------------------------------------------------------------


def test_contact_text_reaches_debug_logs_only(cli: Cli, caplog: pytest.LogCaptureFixture) -> None:
    iid = start(cli)
    caplog.set_level(logging.DEBUG, logger="relay")
    assert cli("receive", PHONE, f"I need a human, my card is {CARD}").exit_code == 0
    assert cli("tick").exit_code == 0
    assert cli("show", iid, "--json").json()["state"] == "NEEDS_HUMAN_INTERVENTION"
    info = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert any("NEEDS_HUMAN_INTERVENTION" in m for m in info)
    assert not any(CARD in m for m in info)
    assert any(CARD in m for m in debug)
    changes = [r for r in caplog.records if r.name == "relay.state"]
    assert changes and all(getattr(r, "instance_id", None) == iid for r in changes)


# -- 14: terminal escapes ------------------------------------------------------------------

HOSTILE = "hi \x1b]8;;http://evil\x07link\x1b]8;;\x07 \x1b[2J\x9b31m [bold]loud[/bold] \x07\x7f"


def _no_raw_controls(out: str) -> None:
    assert "\x1b]" not in out and "\x1b[2J" not in out and "\x9b" not in out
    assert "\x07" not in out and "\x7f" not in out


def test_piped_output_shows_escapes_instead_of_obeying_them(cli: Cli) -> None:
    iid = start(cli)
    assert cli("receive", PHONE, HOSTILE).exit_code == 0
    assert cli("pause", iid, "--reason", HOSTILE).exit_code == 0
    for args in (("transcript", iid), ("history", iid), ("list",), ("show", iid)):
        out = cli(*args).stdout
        _no_raw_controls(out)
    transcript = cli("transcript", iid).stdout
    assert "\\x1b]8;;http://evil\\x07link" in transcript
    assert "[bold]loud[/bold]" in transcript


def test_rich_output_neither_obeys_escapes_nor_reads_contact_markup(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = start(cli)
    assert cli("receive", PHONE, HOSTILE).exit_code == 0
    buffer = io.StringIO()
    monkeypatch.setattr(render, "is_terminal", lambda: True)
    monkeypatch.setattr(
        render, "_console", Console(file=buffer, force_terminal=True, width=400, no_color=True)
    )
    assert cli("transcript", iid).exit_code == 0
    out = buffer.getvalue()
    _no_raw_controls(out)
    assert "[bold]loud[/bold]" in out


def test_json_output_escapes_control_characters(cli: Cli) -> None:
    iid = start(cli)
    assert cli("receive", PHONE, HOSTILE).exit_code == 0
    result = cli("transcript", iid, "--json")
    _no_raw_controls(result.stdout)
    assert "\\u001b]8;;http://evil" in result.stdout
    assert HOSTILE in [m["text"] for m in result.json()]


# -- 15 and 19: the command agent ----------------------------------------------------------


def test_the_command_agents_output_is_bounded(
    tmp_path: Path, make_context: Callable[..., Any]
) -> None:
    script = tmp_path / "flood.py"
    script.write_text("import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n")
    agent = make_agent(
        "command",
        {"command": [sys.executable, str(script)], "max_output": "256KiB", "timeout": "30s"},
    )
    with pytest.raises(AgentError, match=r"more than 262144 bytes .*agent\.command\.max_output"):
        agent.run(make_context())


AGENT = """\
import json, sys
turn = json.load(sys.stdin)
if turn["reason"] == "first_message":
    actions = [{"name": "send_message", "args": {"text": "Hello"}}]
else:
    actions = [{"name": "opt_out", "args": {"reason": "the contact asked to be left alone"}}]
print(json.dumps({"actions": actions}))
"""


def test_an_agent_beside_relay_toml_can_record_an_opt_out(cli: Cli) -> None:
    """``command = ["python3", "agent.py"]`` names the file next to relay.toml, and its
    opt_out action ends the conversation and blocks the contact."""
    Path("relay.toml").write_text(
        '[agent]\nbackend = "command"\n[agent.command]\ncommand = ["python3", "agent.py"]\n'
        "[channels.console]\necho = false\n"
    )
    Path("agent.py").write_text(AGENT)
    iid = start(cli)
    assert cli("show", iid, "--json").json()["state"] == "WAITING_FOR_REPLY"
    assert cli("receive", PHONE, "leave me alone").exit_code == 0
    assert cli("tick").exit_code == 0
    shown = cli("show", iid, "--json").json()
    assert shown["state"] == "COMPLETED", cli("history", iid)
    assert cli("contact", "show", PHONE, "--json").json()["opted_out_at"]
    assert cli("send", iid, "one more thing").exit_code != 0


@pytest.fixture
def make_context() -> Callable[..., Any]:
    from relay.core.turns import ContextTodo, TurnContext

    def make() -> TurnContext:
        return TurnContext(
            instance_id="abc1234",
            reason=TurnReason.FIRST_MESSAGE,
            objective="x",
            contact=PHONE,
            todos=(ContextTodo(1, "y", "pending"),),
            transcript=(),
            new_messages=(),
        )

    return make


# -- 16: configuration, schema, read-only stores -------------------------------------------


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        (
            '[defaults]\nheartbeet = "30m"\n',
            "unknown setting defaults.heartbeet; did you mean defaults.heartbeat?",
        ),
        ('[deamon]\npulse = "1s"\n', "unknown setting deamon.pulse; did you mean daemon.pulse?"),
        (
            '[defaults]\nmax_followups = "five"\n',
            "defaults.max_followups must be a whole number, not 'five'",
        ),
        ('[defaults]\nheartbeat = "soon"\n', "defaults.heartbeat"),
        ('[channels]\nconsole = "on"\n', "channels.console must be a table"),
    ],
)
def test_bad_settings_name_the_key_and_the_file(run_cli: Cli, toml: str, expected: str) -> None:
    Path("relay.toml").write_text(toml)
    result = run_cli("config", "show")
    assert result.exit_code == 2, result
    assert expected in result.stderr
    assert str(Path("relay.toml").resolve()) in result.stderr


def test_backend_sections_keep_free_form_keys(run_cli: Cli) -> None:
    Path("relay.toml").write_text(
        '[channels.sms]\ntype = "twilio"\nbrand_new_key = 3\n[agent.mine]\nanything = "x"\n'
    )
    assert run_cli("config", "show").exit_code == 0


def test_a_schema_newer_than_relay_says_upgrade_relay(cli: Cli, db_url: str) -> None:
    start(cli)
    engine = create_engine(normalise_url(db_url))
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()
    expected = (
        f"the database is at revision 9999, newer than this relay (knows up to {HEAD_REVISION}); "
        "upgrade relay"
    )
    for args in (("list",), ("db", "upgrade")):
        result = cli(*args)
        assert result.exit_code == 2, result
        assert expected in result.stderr
        assert "relay db upgrade" not in result.stderr


def _as_reader(folder: Path) -> list[str]:
    """Run as another user when we are root (root may write anything)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv to drop privileges")
    folder.parent.chmod(0o755)
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def test_a_read_only_store_still_serves_read_commands() -> None:
    work = Path(tempfile.mkdtemp(prefix="relay-ro-", dir="/tmp")) / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAY_")}

    def relay(*args: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
        command = [*prefix, sys.executable, "-m", "relay", *args]
        return subprocess.run(command, cwd=work, env=env, capture_output=True, text=True)

    try:
        assert relay("init").returncode == 0
        iid = relay("start", PHONE, "-o", "x", "-t", "y", "--json").stdout
        iid = __import__("json").loads(iid)["id"]
        data = work / ".relay"
        for path in [*data.iterdir(), work / "relay.toml"]:
            path.chmod(0o444)
        data.chmod(0o555)
        reader = tuple(_as_reader(work))
        for args in (("list",), ("show", iid), ("status",), ("transcript", iid), ("history", iid)):
            done = relay(*args, prefix=reader)
            assert done.returncode == 0, (args, done.stderr)
        refused = relay("pause", iid, prefix=reader)
        assert refused.returncode == 2 and "readonly" in refused.stderr
    finally:
        for path in work.rglob("*"):
            path.chmod(0o700)
        subprocess.run(["rm", "-rf", str(work.parent)], check=False)


# -- 18: opt-out wording -------------------------------------------------------------------

OPT_OUTS = [
    "OPT OUT",
    "opt-out",
    "I want to unsubscribe",
    "stop sending me messages",
    "remove me from your list",
    "do not contact me again",
    "don't text me anymore",
    "Don\u2019t text me anymore.",
    "\uff33\uff34\uff2f\uff30",  # full-width STOP
    "Please take me off your mailing list, thanks",
    "STOP",
]
NOT_OPT_OUTS = [
    "can you stop by tomorrow?",
    "cancel the delivery",
    "End of May works",
    "I can't stop thinking about it",
    "please don't stop the delivery",
    "do not call me before noon",
    "remove me as the contact for the delivery",
    "I want to stop by on Friday",
]


@pytest.mark.parametrize("wording", OPT_OUTS)
def test_common_opt_out_wording_is_recognised(wording: str) -> None:
    assert is_opt_out(wording)


@pytest.mark.parametrize("wording", NOT_OPT_OUTS)
def test_conversation_is_not_mistaken_for_an_opt_out(wording: str) -> None:
    assert not is_opt_out(wording)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_opt_out_ignores_case_and_width(text_: str) -> None:
    full_width = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text_.upper())
    assert is_opt_out(text_.upper()) == is_opt_out(text_.lower()) == is_opt_out(full_width)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(NOT_OPT_OUTS), st.sampled_from(["", " ", "!", "?", " :)"]))
def test_punctuation_does_not_turn_conversation_into_an_opt_out(text_: str, tail: str) -> None:
    assert not is_opt_out(text_ + tail)


def test_a_worded_opt_out_through_the_cli_blocks_the_contact(cli: Cli) -> None:
    iid = start(cli)
    assert cli("receive", PHONE, "Please remove me from your list.").exit_code == 0
    assert cli("show", iid, "--json").json()["state"] == "COMPLETED"
    assert cli("contact", "show", PHONE, "--json").json()["opted_out_at"]


# -- 20: email addresses -------------------------------------------------------------------


def test_email_addresses_match_whatever_their_case(cli: Cli) -> None:
    iid = start(cli, "Ana@X.com")
    assert cli("show", iid, "--json").json()["contact"] == "ana@x.com"
    got = cli("receive", "ana@X.COM", "Thursday works", "--json")
    assert got.json()["instance_id"] == iid
    again = cli("start", "ANA@x.com", "-o", "y", "-t", "z", "--json")
    assert again.json()["state"] == "QUEUED"


def test_the_command_agent_resolves_a_bare_file_beside_relay_toml(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(textwrap.dedent("print('{}')"))
    agent = make_agent("command", {"command": ["python3", "agent.py"], "base_dir": str(tmp_path)})
    assert agent.argv == ("python3", str((tmp_path / "agent.py").resolve()))
