"""Run any program as the agent: the turn context on stdin, actions on stdout.

The program is code the operator chose, but it still gets only what a turn
needs: no inherited environment (so no API keys or database URL it was not
given on purpose), a throwaway working directory and HOME, and a time limit
after which its whole process group is killed. Every failure is a plain
:class:`AgentError` (never retried): a program that crashed or printed garbage
once will most likely do it again, so a person should look.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relay.agents.base import AgentConfigError, AgentError, excerpt, timeout_seconds
from relay.core.errors import InvalidInput
from relay.core.turns import Action, TurnContext, actions_from_json

#: Sent as ``"schema"`` in the stdin document, so a program can check what it reads.
SCHEMA = "relay.turn/1"

#: Seconds to wait for a killed process group to release its pipes.
_REAP_SECONDS = 5.0


@dataclass(frozen=True)
class Completed:
    returncode: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class CommandAgent:
    argv: tuple[str, ...]
    timeout: float = 60.0
    cwd: Path | None = None
    pass_env: tuple[str, ...] = ()
    name: str = "command"

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> CommandAgent:
        base = Path(str(settings.get("base_dir") or os.getcwd()))
        argv = tuple(_resolve(arg, base) for arg in _argv(settings.get("command")))
        cwd = settings.get("cwd")
        return cls(
            argv=argv,
            timeout=timeout_seconds(settings),
            cwd=base / str(cwd) if cwd else None,
            pass_env=_names(settings.get("pass_env", ())),
        )

    def run(self, context: TurnContext) -> list[Action]:
        if self.cwd is not None and not self.cwd.is_dir():
            raise AgentConfigError(f"agent.command.cwd {self.cwd} is not a directory")
        payload = json.dumps({"schema": SCHEMA, **context.to_json()}, default=str)
        with tempfile.TemporaryDirectory(prefix="relay-agent-") as home:
            done = self.execute(payload, home)
        return parse_output(done)

    def environment(self, home: str) -> dict[str, str]:
        """Only what a program needs to start, plus names the operator passed on purpose."""
        env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "HOME": home,
            "RELAY_TURN": "1",
        }
        if os.name == "nt" and "SYSTEMROOT" in os.environ:
            env["SYSTEMROOT"] = os.environ["SYSTEMROOT"]
        env.update({n: os.environ[n] for n in self.pass_env if n in os.environ})
        return env

    def execute(self, payload: str, home: str) -> Completed:
        try:
            proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=str(self.cwd) if self.cwd else home,
                env=self.environment(home),
                start_new_session=True,
                text=True,
                encoding="utf-8",
                errors="replace",
            )
        except OSError as exc:
            raise AgentError(
                f"agent command {self.argv[0]!r} could not start: {exc.strerror or exc}"
            ) from None
        try:
            stdout, stderr = proc.communicate(payload, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _, stderr = _kill(proc)
            raise AgentError(
                f"agent command timed out after {self.timeout:g}s{_stderr(stderr)}"
            ) from None
        except BaseException:
            _kill(proc)
            raise
        return Completed(proc.returncode, stdout, stderr)


def parse_output(done: Completed) -> list[Action]:
    if done.returncode != 0:
        status = (
            f"was killed by signal {-done.returncode}"
            if done.returncode < 0
            else f"exited with status {done.returncode}"
        )
        raise AgentError(f"agent command {status}{_stderr(done.stderr)}")
    if not done.stdout.strip():
        raise AgentError(f"agent command printed nothing on stdout{_stderr(done.stderr)}")
    try:
        data = json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        raise AgentError(
            f"agent command printed invalid JSON ({exc.msg}): "
            f"{excerpt(done.stdout, 80)!r}{_stderr(done.stderr)}"
        ) from None
    try:
        return actions_from_json(data)
    except InvalidInput as exc:
        raise AgentError(f"agent command output: {exc.message}") from None


def _kill(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """Kill the program and anything it started, then collect what it wrote."""
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except ProcessLookupError:
        pass
    try:
        return proc.communicate(timeout=_REAP_SECONDS)
    except subprocess.TimeoutExpired:
        # Something escaped the group and holds the pipes; stop waiting for it.
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc.wait()
        return "", ""


def _stderr(text: str) -> str:
    return f"; stderr: {excerpt(text, tail=True)}" if text.strip() else ""


def _argv(raw: Any) -> list[str]:
    if raw is None:
        raise AgentConfigError(
            "agent.command.command is not set: name the program in [agent.command] "
            'of relay.toml, e.g. command = ["python3", "agent.py"]'
        )
    if isinstance(raw, str):
        argv = shlex.split(raw)
    elif isinstance(raw, list | tuple) and all(isinstance(arg, str) for arg in raw):
        argv = list(raw)
    else:
        raise AgentConfigError(
            f"agent.command.command must be a list of strings or one command line, not {raw!r}"
        )
    if not argv:
        raise AgentConfigError("agent.command.command is empty")
    return argv


def _resolve(arg: str, base: Path) -> str:
    """Make a relative path that names an existing file absolute.

    The program runs in an empty temporary directory, so ``examples/agent.py``
    in relay.toml has to mean "next to relay.toml" (``base_dir``) before then.
    """
    if arg.startswith("-") or os.path.isabs(arg) or ("/" not in arg and os.sep not in arg):
        return arg
    candidate = base / arg
    return str(candidate.resolve()) if candidate.exists() else arg


def _names(raw: Any) -> tuple[str, ...]:
    if isinstance(raw, str):
        raw = [part.strip() for part in raw.split(",") if part.strip()]
    if not isinstance(raw, list | tuple) or not all(isinstance(n, str) for n in raw):
        raise AgentConfigError(
            f"agent.command.pass_env must be a list of variable names, not {raw!r}"
        )
    return tuple(raw)
