"""The command agent, with real child processes: output, failures, time limit, isolation."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from relay.agents.base import AgentConfigError, AgentError, make_agent
from relay.agents.command import SCHEMA, CommandAgent
from relay.core.turns import Action, TurnReason
from relay.testing import wait_until

ROOT = Path(__file__).resolve().parents[3]
ECHO_AGENT = ROOT / "examples" / "echo_agent.py"


def script(tmp_path: Path, body: str, name: str = "agent.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def command(path: Path, **settings: object) -> CommandAgent:
    agent = make_agent(
        "command", {"command": [sys.executable, str(path)], "timeout": "10s", **settings}
    )
    assert isinstance(agent, CommandAgent)
    return agent


def test_reads_the_context_and_returns_the_actions(tmp_path, make_context):
    path = script(
        tmp_path,
        """
        import json, sys
        turn = json.load(sys.stdin)
        todo = turn["todos"][0]
        print(json.dumps({"actions": [
            {"name": "send_message", "args": {"text": turn["schema"] + " " + turn["reason"]}},
            {"name": "mark_todo_item", "args": {"todo_id": todo["id"], "status": "in_progress"}},
            {"name": "set_state", "args": {"key": "seen", "value": turn["instance_id"]}},
        ]}))
        """,
    )
    assert command(path).run(make_context()) == [
        Action.send_message(f"{SCHEMA} first_message"),
        Action.mark_todo_item(1, "in_progress"),
        Action.set_state("seen", "r7k2"),
    ]


def test_the_example_echo_agent_converses(make_context):
    agent = make_agent(
        "command", {"command": [sys.executable, "examples/echo_agent.py"], "base_dir": str(ROOT)}
    )
    assert Path(agent.argv[1]) == ECHO_AGENT  # resolved: the child runs in an empty directory
    [greeting] = agent.run(make_context())
    assert "the order you placed last week" in greeting.args["text"]
    assert agent.run(make_context(TurnReason.REPLY, new=["hello there"])) == [
        Action.send_message("You said: hello there")
    ]
    assert agent.run(make_context(TurnReason.REPLY, new=["bye"]))[-1] == Action.end_conversation()


def test_invalid_json_is_a_non_transient_error_with_an_excerpt(tmp_path, make_context):
    path = script(
        tmp_path, 'import sys; print("Sure! Here are my actions:"); print("oops", file=sys.stderr)'
    )
    with pytest.raises(AgentError) as caught:
        command(path).run(make_context())
    assert not caught.value.transient
    assert "invalid JSON" in caught.value.message
    assert "Sure! Here are my actions:" in caught.value.message
    assert "stderr: oops" in caught.value.message


def test_json_that_is_not_actions_is_an_error(tmp_path, make_context):
    path = script(tmp_path, 'print(\'{"say": "hi"}\')')
    with pytest.raises(AgentError, match=r'agent command output: agent output must be \{"actions"'):
        command(path).run(make_context())


def test_no_output_is_an_error(tmp_path, make_context):
    with pytest.raises(AgentError, match="printed nothing"):
        command(script(tmp_path, "pass")).run(make_context())


def test_a_non_zero_exit_reports_the_end_of_stderr_on_one_line(tmp_path, make_context):
    path = script(
        tmp_path,
        """
        import sys
        for i in range(50):
            print(f"noise line {i} " + "x" * 40, file=sys.stderr)
        print("ValueError: the model is unreachable", file=sys.stderr)
        sys.exit(3)
        """,
    )
    with pytest.raises(AgentError) as caught:
        command(path).run(make_context())
    message = caught.value.message
    assert not caught.value.transient
    assert message.startswith("agent command exited with status 3; stderr: …")
    assert message.endswith("ValueError: the model is unreachable")
    assert "\n" not in message
    assert len(message) < 300


def test_a_timeout_kills_the_whole_process_group(tmp_path, make_context):
    pid_file = tmp_path / "grandchild.pid"
    path = script(
        tmp_path,
        f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        print("thinking...", file=sys.stderr, flush=True)
        time.sleep(60)
        """,
    )
    with pytest.raises(AgentError) as caught:
        command(path, timeout="1s").run(make_context())
    assert not caught.value.transient
    assert caught.value.message == "agent command timed out after 1s; stderr: thinking..."
    grandchild = int(pid_file.read_text())
    # SIGKILL went to the whole group before run() returned; the kernel finishes a
    # killed process a moment later (seen alive right after, once, under load).
    wait_until(lambda: not _alive(grandchild), timeout=10)


def _alive(pid: int) -> bool:
    """A zombie has been killed, it only waits for its new parent to reap it."""
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


ENV_DUMP = """
import json, os, sys
json.load(sys.stdin)
report = {"env": dict(os.environ), "cwd": os.getcwd()}
print(json.dumps({"actions": [{"name": "send_message", "args": {"text": json.dumps(report)}}]}))
"""


def _child_view(agent: CommandAgent, context) -> dict:
    [action] = agent.run(context)
    return json.loads(action.args["text"])


def test_the_child_sees_no_inherited_secrets(tmp_path, make_context, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-do-not-leak")
    monkeypatch.setenv("RELAY_DATABASE_URL", "postgresql://relay:pw@db/relay")
    monkeypatch.setenv("RELAY_CONFIG", str(tmp_path / "relay.toml"))
    monkeypatch.chdir(tmp_path)
    view = _child_view(command(script(tmp_path, ENV_DUMP)), make_context())
    env = view["env"]
    assert "sk-secret-do-not-leak" not in json.dumps(view)
    assert "postgresql://" not in json.dumps(view)
    assert set(env) - {"LC_CTYPE"} == {"PATH", "LANG", "HOME", "RELAY_TURN"}
    assert env["RELAY_TURN"] == "1"
    assert env["HOME"] == view["cwd"]
    assert Path(view["cwd"]).resolve() != tmp_path.resolve()
    assert not Path(view["cwd"]).exists()  # a throwaway directory, removed after the turn


def test_pass_env_and_cwd_are_explicit_opt_ins(tmp_path, make_context, monkeypatch):
    monkeypatch.setenv("MY_AGENT_KEY", "given on purpose")
    monkeypatch.setenv("OTHER_SECRET", "not given")
    work = tmp_path / "work"
    work.mkdir()
    agent = command(
        script(tmp_path, ENV_DUMP), pass_env=["MY_AGENT_KEY"], cwd="work", base_dir=str(tmp_path)
    )
    view = _child_view(agent, make_context())
    assert view["env"]["MY_AGENT_KEY"] == "given on purpose"
    assert "OTHER_SECRET" not in view["env"]
    assert Path(view["cwd"]).resolve() == work.resolve()


def test_a_missing_program_is_an_error(make_context):
    agent = make_agent("command", {"command": "relay-no-such-agent-program --flag"})
    with pytest.raises(AgentError, match="'relay-no-such-agent-program' could not start"):
        agent.run(make_context())


def test_a_command_line_string_is_split():
    agent = make_agent("command", {"command": "python3 -u 'my agent.py'"})
    assert agent.argv == ("python3", "-u", "my agent.py")


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({}, "agent.command.command is not set"),
        ({"command": []}, "is empty"),
        ({"command": ["python3", 3]}, "must be a list of strings"),
        ({"command": "x", "timeout": "soon"}, "agent.timeout: invalid duration"),
        ({"command": "x", "pass_env": [1]}, "pass_env must be a list"),
    ],
)
def test_bad_settings_are_config_errors(settings, message):
    with pytest.raises(AgentConfigError, match=message):
        make_agent("command", settings)


def test_relative_paths_resolve_only_when_they_exist(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "agent.sh").write_text("")
    agent = make_agent(
        "command",
        {
            "command": ["bin/agent.sh", "--out=x/y", "missing/file", "plain"],
            "base_dir": str(tmp_path),
        },
    )
    assert agent.argv == (
        str((tmp_path / "bin" / "agent.sh").resolve()),
        "--out=x/y",
        "missing/file",
        "plain",
    )


@pytest.mark.skipif(os.name != "posix", reason="signals")
def test_a_child_killed_by_a_signal_says_so(tmp_path, make_context):
    path = script(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGTERM)")
    with pytest.raises(AgentError, match="was killed by signal 15"):
        command(path).run(make_context())


def test_a_missing_working_directory_is_named(tmp_path, make_context):
    agent = make_agent("command", {"command": "true", "cwd": "nowhere", "base_dir": str(tmp_path)})
    with pytest.raises(AgentConfigError, match=r"agent\.command\.cwd .*nowhere is not a directory"):
        agent.run(make_context())
