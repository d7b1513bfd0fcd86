"""Inputs taken or told badly (issue 32): every usage error is one ``relay: error:``
line with where to find help and exit 2; empty values are refused; a configuration
that is not UTF-8 is named; channel options apply by type; files are owner-only."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from relay.runner.pulse import Pulse
from relay.testing import PHONE


def one_error_line(result: Any) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert len(lines) == 1 and lines[0].startswith("relay: error: "), result.stderr
    return str(lines[0])


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("retry", "abc"), "'abc' is not a valid integer (see 'relay retry -h')"),
        (
            ("start", PHONE, "--objective", "x", "--todo", "y", "--max-followups", "ten"),
            "'--max-followups': 'ten' is not a valid integer (see 'relay start -h')",
        ),
        (("--bogus", "list"), "no such option: --bogus (see 'relay -h')"),
        (("nosuchcommand",), "no such command 'nosuchcommand'"),
        (("start", PHONE, "--objective", "x", "--todo", "y", "--heartbeat", ""), "--heartbeat"),
        (("start", PHONE, "--objective", "x", "--todo", "y", "--channel", " "), "--channel"),
        (("start", PHONE, "-o", "x", "--todo", "y", "--window", ""), "--window is empty"),
        (("start", PHONE, "-o", "x", "--todo", "y", "--window", "  "), "--window is empty"),
        (("start", PHONE, "-o", "x", "--todo", "y", "--window", "soon"), "invalid window 'soon'"),
        (("start", PHONE, "-o", "x", "--todo", "y", "--subject", ""), "--subject is empty"),
        (("start", PHONE, "-o", "x", "--todo", "y", "--approval", ""), "--approval is empty"),
        (
            ("start", PHONE, "-o", "x", "--todo", "y", "--whatsapp-template", ""),
            "--whatsapp-template is empty",
        ),
        (("retry", "9" * 30), f"no outbound message {'9' * 30}"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(cli: Any, args: tuple[str, ...], says: str) -> None:
    assert says in one_error_line(cli(*args))


def test_an_empty_heartbeat_starts_nothing(cli: Any) -> None:
    one_error_line(cli("start", PHONE, "--objective", "x", "--todo", "y", "--heartbeat", ""))
    listed = cli("list", "--json")
    assert listed.exit_code == 0 and PHONE not in listed.stdout


def test_an_empty_window_for_an_import_starts_nothing(cli: Any, tmp_path: Path) -> None:
    """Refused before any row is read (not row by row, with exit 0)."""
    (tmp_path / "contacts.csv").write_text(f"phone\n{PHONE}\n")
    args = ("import", str(tmp_path / "contacts.csv"), "-o", "x", "--todo", "y", "--window", "")
    assert "--window is empty" in one_error_line(cli(*args))
    listed = cli("list", "--json")
    assert listed.exit_code == 0 and PHONE not in listed.stdout


def test_a_malformed_window_in_the_configuration_is_named_with_its_file(
    cli: Any, tmp_path: Path
) -> None:
    (tmp_path / "relay.toml").write_text('[defaults]\nwindow = "weekdays"\n')
    line = one_error_line(cli("list"))
    assert str(tmp_path / "relay.toml") in line and "defaults.window" in line
    assert "invalid window 'weekdays'" in line


def test_a_configuration_that_is_not_utf8_is_named(cli: Any, tmp_path: Path) -> None:
    (tmp_path / "relay.toml").write_bytes(b'[defaults]\nchannel = "caf\xe9"\n')
    line = one_error_line(cli("list"))
    assert str(tmp_path / "relay.toml") in line and "UTF-8" in line


def test_a_detached_daemon_quiets_every_console_channel_by_type(
    run_cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, db_url: str
) -> None:
    from relay.cli import daemon_commands
    from relay.cli.session import state

    (tmp_path / "relay.toml").write_text(
        '[channels.slow]\ntype = "console"\n\n[channels.hook]\ntype = "webhook"\n'
        'url = "http://127.0.0.1:9/x"\n'
    )
    seen: dict[str, Any] = {}

    def foreground(*args: Any) -> None:
        config = state.config()
        seen.update({name: config.get(f"channels.{name}.echo") for name in ("slow", "hook")})
        seen["console"] = config.get("channels.console.echo")

    monkeypatch.setattr(daemon_commands, "_run_foreground", foreground)
    result = run_cli("daemon", "--detached-child", env={"RELAY_DATABASE_URL": db_url})
    assert result.exit_code == 0, result.stderr
    assert seen == {"slow": False, "hook": None, "console": False}


def test_the_console_file_is_owner_only_through_the_python_api(
    make_relay: Any, db_url: str, clock: Any, tmp_path: Path
) -> None:
    import os

    old = os.umask(0o022)
    try:
        out = tmp_path / "out" / "console.jsonl"
        relay = make_relay(
            db_url, clock, **{"channels.console.file": str(out), "channels.console.echo": False}
        )
        relay.start(PHONE, "the delivery", ["Which day?"])
        Pulse(relay, "d1").run()
    finally:
        os.umask(old)
    assert out.exists() and stat.S_IMODE(out.stat().st_mode) == 0o600
