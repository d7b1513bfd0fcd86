"""relay.testing as a pytest plugin: a user's own tests get the shipped doubles as
fixtures, with nothing but relay installed (the example in docs/api.md runs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"

MORE = '''

def test_a_reply_completes_the_conversation(relay_harness, relay_agent, relay_channel):
    relay_agent.then([Action.send_message("Which day suits you?")])
    iid = relay_harness.start(todos=["Which day?"], agent="script", channel="test")
    relay_harness.relay.receive("+15551230001", "Thursday")
    relay_agent.then([Action.end_conversation("done")])
    relay_harness.tick()
    assert relay_harness.state(iid) == "COMPLETED"
    assert [c.reason for c in relay_agent.contexts][-1].value == "reply"


def test_the_clock_is_shared(relay_harness, relay_clock):
    assert relay_harness.clock is relay_clock
'''


def _documented_example() -> str:
    section = DOC.read_text(encoding="utf-8").split("## Testing your integration", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found is not None
    return found.group(1)


def test_a_users_tests_get_the_fixtures(pytester: pytest.Pytester) -> None:
    assert pytester.parseconfig().pluginmanager.has_plugin("relay")
    pytester.makepyfile(test_user=_documented_example() + MORE)
    # Not the project's conftest: only what an installed relay gives.
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "0", "-q")
    result.assert_outcomes(passed=3)
