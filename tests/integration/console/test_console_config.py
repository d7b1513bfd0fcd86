"""Starting ``relay serve`` with the console misconfigured is refused with one
line and exit 2, before anything listens; the credential parsing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from relay.console import auth
from relay.core.errors import ConfigError


def write_config(folder: Path, console: str) -> Path:
    path = folder / "relay.toml"
    path.write_text(f"[console]\nenabled = true\n{console}\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("console", "env", "args", "says"),
    [
        ("", {}, [], "set operator_token_env or readonly_token_env"),
        ('operator_token_env = "OP"', {}, [], "console: OP is not set"),
        ('operator_token_env = "OP"', {"OP": "short"}, [], "under 12 characters"),
        (
            'operator_token_env = "OP"',
            {"OP": "x" * 20},
            ["--host", "0.0.0.0"],
            "the console listens on loopback only",
        ),
        (
            'operator_token_env = "OP"\nsession_secret_env = "SS"',
            {"OP": "x" * 20},
            [],
            "console: SS is not set",
        ),
        ("enabled = 1", {}, [], "console.enabled must be true or false"),
    ],
)
def test_a_misconfigured_console_is_refused_at_start(
    run_cli: Callable[..., Any],
    tmp_path: Path,
    console: str,
    env: dict[str, str],
    args: list[str],
    says: str,
) -> None:
    if console.startswith("enabled"):
        path = tmp_path / "relay.toml"
        path.write_text(f"[console]\n{console}\n", encoding="utf-8")
    else:
        path = write_config(tmp_path, console)
    result = run_cli("--config", str(path), "serve", "--port", "9", *args, env=env)
    assert result.exit_code == 2, result
    assert says in result.stderr
    assert result.stderr.startswith("relay: error:") and result.stderr.count("\n") == 1


def test_a_password_hash_signs_in_with_the_password_only() -> None:
    hashed = auth.hash_password("correct horse battery", iterations=1000)
    credential = auth.Credential.parse(auth.OPERATOR, hashed, "OP")
    assert credential.matches("correct horse battery")
    assert not credential.matches("correct horse battery ")
    assert not credential.matches(hashed)
    with pytest.raises(ConfigError, match="malformed"):
        auth.Credential.parse(auth.OPERATOR, "pbkdf2_sha256$x$y", "OP")


def test_a_session_cookie_expires_and_cannot_be_forged() -> None:
    gate = auth.Gate([auth.Credential.parse(auth.READONLY, "r" * 16, "RO")], b"k" * 32, 60)
    assert gate.sign_in("r" * 16) == auth.READONLY
    assert gate.sign_in("o" * 16) is None
    cookie = gate.cookie_for(auth.READONLY)
    session = gate.session(cookie)
    assert session is not None and not session.can_act
    other = auth.Gate(gate.credentials, b"j" * 32, 60)
    assert other.session(cookie) is None  # another key: not ours
    expired = auth.Gate(gate.credentials, b"k" * 32, -1)
    assert expired.session(expired.cookie_for(auth.OPERATOR)) is None
    assert gate.session("garbage") is None and gate.session(None) is None


def test_sign_ins_are_throttled_per_client_after_ten_failures() -> None:
    now = [1000.0]
    throttle = auth.Throttle(limit=10, window=900, clock=lambda: now[0])
    for _ in range(9):
        throttle.failed("10.0.0.7")
    assert not throttle.blocked("10.0.0.7")
    throttle.failed("10.0.0.7")
    assert throttle.blocked("10.0.0.7") and not throttle.blocked("10.0.0.8")
    now[0] += 901  # the failures age out
    assert not throttle.blocked("10.0.0.7")
