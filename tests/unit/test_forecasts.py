"""A forecast is data a program reads and words people read; the words are the
ones ``relay show`` has always printed."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from relay.core.forecasts import RUNNER, Delivery, Forecast, Next, describe

AT = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
LATER = datetime(2026, 3, 2, 18, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("forecast", "words"),
    [
        (Forecast(Next.FIRST_MESSAGE, due=True), f"first message due now ({RUNNER})"),
        (
            Forecast(Next.FIRST_MESSAGE, until=LATER),
            "first message held for the sending window until 2026-03-02 18:00:00Z",
        ),
        (Forecast(Next.FOLLOW_UP, due=True, number="2/5"), f"follow-up 2/5 due now ({RUNNER})"),
        (
            Forecast(Next.FOLLOW_UP, at=AT, due=True, number="1/3"),
            f"follow-up 1/3 due since 2026-03-02 09:30:00Z ({RUNNER})",
        ),
        (
            Forecast(Next.FOLLOW_UP, at=AT, until=LATER, number="1/3"),
            "follow-up 1/3 due 2026-03-02 09:30:00Z, held for the sending window "
            "until 2026-03-02 18:00:00Z",
        ),
        (
            Forecast(Next.FOLLOW_UP, at=AT, number="1/3", at_window_open=True),
            "follow-up 1/3 at 2026-03-02 09:30:00Z, when the sending window opens",
        ),
        (Forecast(Next.REPLY, due=True), f"reply due now ({RUNNER})"),
        (
            Forecast(Next.DELIVERY, delivery=Delivery.SENDING, channel="sms", attempt=2),
            "being delivered on sms (attempt 2)",
        ),
        (
            Forecast(Next.DELIVERY, delivery=Delivery.RETRY, channel="sms", attempt=3),
            "waiting for delivery (attempt 3, retry now)",
        ),
        (
            Forecast(Next.DELIVERY, delivery=Delivery.READY, channel="console", due=True),
            f"queued for delivery on console now ({RUNNER})",
        ),
        (
            Forecast(Next.ABANDON, at=AT),
            "none: abandons at 2026-03-02 09:30:00Z unless the contact replies",
        ),
        (
            Forecast(Next.QUEUED, detail="a1b2c3"),
            "waits until the contact's live conversation a1b2c3 ends",
        ),
        (
            Forecast(Next.PAUSED, remaining_seconds=5400),
            "paused: nothing is sent until `relay resume`; the follow-up countdown "
            "resumes with 1h30m left",
        ),
        (
            Forecast(Next.PERSON, detail="no template"),
            "waits for a person: `relay send` or `relay resume` (no template)",
        ),
    ],
)
def test_each_forecast_has_its_words(forecast: Forecast, words: str) -> None:
    assert describe(forecast) == words


def test_a_forecast_as_json_names_what_comes_next_and_when() -> None:
    data = Forecast(Next.FOLLOW_UP, at=AT, until=LATER, number="1/3").to_json()
    assert data["next"] == "follow_up"
    assert (data["at"], data["until"], data["due"]) == (
        "2026-03-02T09:30:00Z",
        "2026-03-02T18:00:00Z",
        False,
    )
