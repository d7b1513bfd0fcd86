"""``relay demo``: a whole conversation on a throw-away database, with a simulated contact.

It exercises the real pieces (store, state machine, scripted agent, console
channel, outbox, pulse), only the contact is played by code, so a new user
sees relay work end to end before configuring anything.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from relay.config import DEFAULTS, Config
from relay.core.states import ENDED, NEEDS_PERSON, TAKES_REPLIES, values
from relay.engine.runtime import Context
from relay.engine.turns.runner import start_now
from relay.engine.verbs import conversations, incoming, lookups, starting
from relay.engine.views.instances import InstanceView, MessageView, TransitionView
from relay.engine.views.reports import ResultView
from relay.runner.pulse import Pulse
from relay.store.opening import open_store

CONTACT = "+1 555 010 0199"
OBJECTIVE = "your delivery of order #1042"
#: Each todo says what kind of answer it wants (``::KIND``, see relay.core.answers).
TODOS = (
    "Is 12 Harbour Street the right delivery address?::yesno",
    "Which day suits you for the delivery?::date",
    "What number can the driver call?::phone",
)
#: The second reply is no date: relay refuses it back to the agent, which asks again.
ANSWERS = (
    "Yes, 12 Harbour Street is right.",
    "Some time next week.",
    "Thursday works for me.",
    "The driver can call 555-0143.",
)
MAX_ROUNDS = 20


@dataclass(frozen=True)
class DemoResult:
    instance: InstanceView
    transcript: list[MessageView]
    history: list[TransitionView]
    result: ResultView


@contextmanager
def demo_config() -> Iterator[Config]:
    """Built-in defaults only, with the database and console files in a temporary folder.

    The working directory's relay.toml and RELAY_* variables are not read: a
    project's sending window, console file or model server must not leak into
    (or be written by) the throw-away demo.
    """
    with tempfile.TemporaryDirectory(prefix="relay-demo-") as folder:
        root = Path(folder)
        values = {
            **DEFAULTS,
            "database.url": f"sqlite:///{root / 'demo.db'}",
            "channels.console.echo": False,
            "agent.backend": "scripted",
            "defaults.channel": "console",
        }
        yield Config(values, dict.fromkeys(values, "demo"), None, root)


def run_demo(on_event: Callable[[str], None] = lambda _: None) -> DemoResult:
    with demo_config() as config:
        relay = Context(open_store(config.database_url, create=True), config)
        try:
            return _converse(relay, on_event)
        finally:
            relay.store.dispose()


def _converse(relay: Context, on_event: Callable[[str], None]) -> DemoResult:
    view = starting.start(relay, CONTACT, OBJECTIVE, list(TODOS))
    on_event(f"started {view.id} with {view.contact}: {view.state}")
    outcome = start_now(relay, view.id, owner="demo")
    for text in outcome.messages if outcome else ():
        on_event(f"relay  → {text}")
    pulse = Pulse(relay, owner="demo")
    answers = iter(ANSWERS)
    for _ in range(MAX_ROUNDS):
        view = conversations.get(relay, view.id)
        if view.state in values(ENDED | NEEDS_PERSON):
            break
        if view.state in values(TAKES_REPLIES):
            answer = next(answers, "That's all from me.")
            on_event(f"contact → {answer}")
            incoming.receive(relay, CONTACT, answer)
        report = pulse.run()
        for turn in report.turns:
            for text in turn.messages:
                on_event(f"relay  → {text}")
    final = conversations.get(relay, view.id)
    on_event(f"ended {final.id}: {final.state} ({final.end_reason or final.failure_reason or '-'})")
    return DemoResult(
        final,
        conversations.transcript(relay, view.id),
        conversations.history(relay, view.id),
        lookups.result(relay, view.id),
    )
