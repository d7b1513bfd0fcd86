"""Run any program as the agent: the turn context on stdin, actions on stdout.

The program is code the operator chose, but it still gets only what a turn
needs: no inherited environment (so no API keys or database URL it was not
given on purpose), a throwaway working directory and HOME, and a time limit
after which its whole process group is killed. Every failure is a plain
:class:`AgentError` (never retried): a program that crashed or printed garbage
once will most likely do it again, so a person should look.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from relay.agents.base import AgentConfigError, AgentError, excerpt, timeout_seconds
from relay.core.errors import InvalidInput
from relay.core.turns import Action, TurnContext, actions_from_json

#: Sent as ``"schema"`` in the stdin document, so a program can check what it reads.
SCHEMA = "relay.turn/1"

#: Seconds to wait for a killed process to be reaped.
_REAP_SECONDS = 5.0

#: Default most bytes of stdout read from the program (``agent.command.max_output``).
MAX_OUTPUT = 1024 * 1024
#: Bytes read from a pipe at a time, and the tail of stderr kept for error messages.
_CHUNK = 65536
_STDERR_KEPT = 65536


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
    max_output: int = MAX_OUTPUT
    name: str = "command"

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> CommandAgent:
        base = Path(str(settings.get("base_dir") or os.getcwd()))
        argv = tuple(
            _resolve(arg, base, program=i == 0)
            for i, arg in enumerate(_argv(settings.get("command")))
        )
        cwd = settings.get("cwd")
        return cls(
            argv=argv,
            timeout=timeout_seconds(settings),
            cwd=base / str(cwd) if cwd else None,
            pass_env=_names(settings.get("pass_env", ())),
            max_output=_size(settings.get("max_output", MAX_OUTPUT)),
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
            )
        except OSError as exc:
            raise AgentError(
                f"agent command {self.argv[0]!r} could not start: {exc.strerror or exc}"
            ) from None
        try:
            out, err = _exchange(proc, payload.encode("utf-8"), self.timeout, self.max_output)
        except BaseException:
            _kill(proc)
            raise
        proc.wait()
        return Completed(proc.returncode, _text(out), _text(err))


def _text(data: bytes | bytearray) -> str:
    return data.decode("utf-8", errors="replace")


def _exchange(
    proc: subprocess.Popen[bytes], payload: bytes, timeout: float, limit: int
) -> tuple[bytes, bytes]:
    """Write the payload and read both pipes to their end, within the time limit and
    with at most ``limit`` bytes of stdout: a runaway program is killed, not buffered
    (300 MB of output once took relay to a gigabyte of memory)."""
    streams = _Streams(proc, payload)
    deadline = time.monotonic() + timeout
    while streams.open():
        left = deadline - time.monotonic()
        if left <= 0:
            _kill(proc)
            raise AgentError(
                f"agent command timed out after {timeout:g}s{_stderr(_text(streams.err))}"
            )
        streams.step(left)
        if len(streams.out) > limit:
            _kill(proc)
            raise AgentError(
                f"agent command printed more than {limit} bytes on stdout and was stopped "
                "(agent.command.max_output)"
            )
    return bytes(streams.out), bytes(streams.err)


class _Streams:
    """The three pipes of one run, multiplexed with a selector."""

    def __init__(self, proc: subprocess.Popen[bytes], payload: bytes) -> None:
        assert proc.stdin and proc.stdout and proc.stderr
        self.selector = selectors.DefaultSelector()
        self.out, self.err = bytearray(), bytearray()
        self.payload = memoryview(payload)
        self.stdin = proc.stdin
        if payload:
            os.set_blocking(self.stdin.fileno(), False)
            self.selector.register(self.stdin, selectors.EVENT_WRITE)
        else:
            self.stdin.close()
        self.selector.register(proc.stdout, selectors.EVENT_READ, self.out)
        self.selector.register(proc.stderr, selectors.EVENT_READ, self.err)

    def open(self) -> bool:
        return bool(self.selector.get_map())

    def step(self, timeout: float) -> None:
        for key, _ in self.selector.select(min(timeout, 1.0)):
            if key.fileobj is self.stdin:
                self._write()
                continue
            chunk = os.read(key.fd, _CHUNK)
            if not chunk:
                self.selector.unregister(key.fileobj)
                key.fileobj.close()  # type: ignore[union-attr]
                continue
            key.data.extend(chunk)
            if key.data is self.err and len(self.err) > _STDERR_KEPT:
                del self.err[: len(self.err) - _STDERR_KEPT]

    def _write(self) -> None:
        try:
            written = os.write(self.stdin.fileno(), self.payload[:_CHUNK])
        except BrokenPipeError:
            written = len(self.payload)  # the program stopped reading; its output says why
        self.payload = self.payload[written:]
        if not self.payload:
            self.selector.unregister(self.stdin)
            self.stdin.close()


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


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill the program and anything it started; what it wrote is dropped unread."""
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except ProcessLookupError:
        pass
    if proc.stdin is not None and not proc.stdin.closed:
        proc.stdin.close()
    _drain([p for p in (proc.stdout, proc.stderr) if p is not None and not p.closed])
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=_REAP_SECONDS)


def _drain(pipes: list[IO[bytes]]) -> None:
    """Read and drop what is left until every killed writer has closed its end (so
    the whole group is gone when this returns); give up after a while in case
    something escaped the group and holds a pipe."""
    selector = selectors.DefaultSelector()
    for pipe in pipes:
        selector.register(pipe, selectors.EVENT_READ)
    deadline = time.monotonic() + _REAP_SECONDS
    while selector.get_map() and time.monotonic() < deadline:
        for key, _ in selector.select(max(deadline - time.monotonic(), 0)):
            if not os.read(key.fd, _CHUNK):
                selector.unregister(key.fileobj)
    for pipe in pipes:
        pipe.close()


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


def _resolve(arg: str, base: Path, *, program: bool = False) -> str:
    """Make a relative path that names an existing file next to relay.toml absolute.

    The program runs in an empty temporary directory, so ``agent.py`` or
    ``examples/agent.py`` in relay.toml has to mean "next to relay.toml"
    (``base_dir``) before then. The program itself (``python3``) is looked up
    on PATH unless it is written as a path (``./agent``, ``bin/agent``).
    """
    if arg.startswith("-") or os.path.isabs(arg):
        return arg
    if program and "/" not in arg and os.sep not in arg:
        return arg
    candidate = base / arg
    return str(candidate.resolve()) if candidate.exists() else arg


_SIZE = re.compile(r"(\d+)\s*(|b|k|kb|kib|m|mb|mib)", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1 << 20, "mb": 1 << 20}


def _size(raw: Any) -> int:
    """Bytes from ``1048576``, ``"512KiB"`` or ``"1MiB"`` (K and M are binary)."""
    if isinstance(raw, int) and not isinstance(raw, bool) and raw > 0:
        return raw
    match = _SIZE.fullmatch(str(raw).strip())
    if match is None or int(match.group(1)) <= 0:
        raise AgentConfigError(
            f'agent.command.max_output must be a size such as 1048576 or "1MiB", not {raw!r}'
        )
    unit = match.group(2).lower()
    return int(match.group(1)) * _UNITS.get(unit, 1 << 20)


def _names(raw: Any) -> tuple[str, ...]:
    if isinstance(raw, str):
        raw = [part.strip() for part in raw.split(",") if part.strip()]
    if not isinstance(raw, list | tuple) or not all(isinstance(n, str) for n in raw):
        raise AgentConfigError(
            f"agent.command.pass_env must be a list of variable names, not {raw!r}"
        )
    return tuple(raw)
