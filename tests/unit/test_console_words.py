"""What the console's list says comes next, and whose name it shows: the engine's
answers (``at_a_glance``, ``contact_name``, the ones ``relay watch`` shows), in
the console's words and time format."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from relay.console import pages
from relay.core.forecasts import Next
from relay.engine.views.reports import contact_name

NOW = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
LATER = NOW + timedelta(hours=2)


def row(state: str, **given: Any) -> SimpleNamespace:
    fields = {
        "next_heartbeat_at": None, "follow_up_count": 0, "max_followups": 3, "not_before": None,
        "paused_until": None, "heartbeat_remaining_seconds": None, "ended_at": None,
        "drafts_pending": 0,
    }  # fmt: skip
    return SimpleNamespace(state=state, **{**fields, **given})


@pytest.mark.parametrize(
    ("listed", "words"),
    [
        (row("WAITING_FOR_REPLY", next_heartbeat_at=LATER), "follow-up 2026-03-02 11:30 UTC"),
        (
            row("WAITING_FOR_REPLY", next_heartbeat_at=LATER, follow_up_count=3),
            "gives up 2026-03-02 11:30 UTC",
        ),
        # A draft waits: the countdown does not run until a person approves it.
        (row("WAITING_FOR_REPLY", drafts_pending=1), "a draft awaits approval"),
        (row("WAITING_FOR_REPLY", drafts_pending=2), "2 drafts await approval"),
        (row("WAITING_FOR_REPLY"), "waits for the contact's reply"),
        (row("CREATED", not_before=LATER), "first message 2026-03-02 11:30 UTC"),
        (row("CREATED"), "first message now"),
        (row("PAUSED", paused_until=LATER), "resumes 2026-03-02 11:30 UTC"),
        (row("PAUSED"), "paused until resumed"),
        (row("QUEUED"), "waits for the contact's live conversation"),
        (row("NEEDS_HUMAN_INTERVENTION"), "waits for a person"),
        (row("WAITING_FOR_AGENT"), "agent's turn now"),
        (row("HEARTBEAT_SCHEDULED"), "agent's turn now"),
        (row("ACTIVE"), "agent's turn now"),
        (row("COMPLETED", ended_at=NOW), "ended 2026-03-02 09:30 UTC"),
    ],
)
def test_next_step_words(listed: SimpleNamespace, words: str) -> None:
    assert pages.next_step(listed, NOW) == words


def test_every_forecast_has_the_consoles_words_and_watchs() -> None:
    from relay.cli.watch_screen import next_step
    from relay.core.forecasts import Forecast

    assert set(pages._NEXT_WORDS) == set(Next)
    for kind in Next:
        assert next_step(Forecast(kind, detail="1"), NOW)


@pytest.mark.parametrize(
    ("fields", "name"),
    [
        ({"name": "Ana Lima", "first_name": "Ana"}, "Ana Lima"),
        ({"First Name": "Ben", "Last Name": "Okafor"}, "Ben Okafor"),
        ({"last_name": "Sato"}, "Sato"),
        ({"Name": "Chloé Martin"}, "Chloé Martin"),
        ({"name": "", "company": "Acme"}, None),
        (None, None),
    ],
)
def test_one_contact_name_for_every_view(fields: dict[str, str] | None, name: str | None) -> None:
    assert contact_name(fields) == name
    assert pages.contact_name is contact_name  # the console shows the engine's
