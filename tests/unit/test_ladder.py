"""The channel ladder's rules (relay.core.ladder): pure, no store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from relay.core import ladder
from relay.core.errors import InvalidInput
from relay.core.ladder import Rung

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
LADDER = (Rung("whatsapp", "phone"), Rung("sms", "phone"), Rung("email", "email"))


def test_a_comma_list_is_the_ladder_in_order() -> None:
    assert ladder.parse_channels("whatsapp, sms,email") == ("whatsapp", "sms", "email")
    assert ladder.parse_channels("sms") == ("sms",)


@pytest.mark.parametrize(
    ("text", "error"), [("sms,,email", "empty name"), ("sms,email,sms", "sms twice"), ("", "empty")]
)
def test_a_bad_list_is_refused(text: str, error: str) -> None:
    with pytest.raises(InvalidInput, match=error):
        ladder.parse_channels(text)


def test_channels_that_reach_no_address_are_left_out() -> None:
    found = ladder.resolve(
        ("whatsapp", "telegram", "email"), [("email", "email"), ("whatsapp", "phone")]
    )
    assert found == (Rung("whatsapp", "phone"), Rung("email", "email"))
    assert ladder.resolve(("sms",), []) == ()


def test_stored_and_read_back() -> None:
    assert ladder.from_json(ladder.to_json(LADDER)) == LADDER
    assert ladder.from_json(None) == () and ladder.from_json([]) == ()


def test_a_failure_on_the_current_rung_moves_down_one() -> None:
    assert ladder.after_failure(LADDER, "whatsapp", "whatsapp") == Rung("sms", "phone")
    assert ladder.after_failure(LADDER, "sms", "sms") == Rung("email", "email")


def test_a_failure_at_the_bottom_or_of_a_rung_left_moves_nothing() -> None:
    assert ladder.after_failure(LADDER, "email", "email") is None  # a person takes over
    assert ladder.after_failure(LADDER, "sms", "whatsapp") is None  # a late receipt
    assert ladder.after_failure((), "sms", "sms") is None  # no ladder


def test_silence_counts_from_the_first_message_on_the_rung_or_the_last_reply() -> None:
    wait = timedelta(days=2)
    assert not ladder.silence_passed(T0, None, T0 + timedelta(days=1), wait)
    assert ladder.silence_passed(T0, None, T0 + wait, wait)
    # The contact wrote a day in: two days count from then.
    replied = T0 + timedelta(days=1)
    assert not ladder.silence_passed(T0, replied, T0 + wait, wait)
    assert ladder.silence_passed(T0, replied, replied + wait, wait)
    # A reply older than the rung's first message does not move the start back.
    assert ladder.silence_passed(T0, T0 - timedelta(days=5), T0 + wait, wait)


def test_no_silence_without_a_message_out_or_a_wait() -> None:
    later = T0 + timedelta(days=30)
    assert not ladder.silence_passed(None, None, later, timedelta(days=2))
    assert not ladder.silence_passed(T0, None, later, None)


def test_after_silence_moves_down_one_and_stops_at_the_bottom() -> None:
    wait = timedelta(hours=12)
    late = T0 + timedelta(days=1)
    assert ladder.after_silence(LADDER, "whatsapp", T0, None, late, wait) == Rung("sms", "phone")
    assert ladder.after_silence(LADDER, "sms", T0, None, T0 + timedelta(hours=1), wait) is None
    assert ladder.after_silence(LADDER, "email", T0, None, late, wait) is None


def test_a_reply_on_another_rung_brings_the_conversation_there() -> None:
    assert ladder.after_reply(LADDER, "email", "whatsapp") == Rung("whatsapp", "phone")
    assert ladder.after_reply(LADDER, "sms", "sms") is None
    assert ladder.after_reply(LADDER, "sms", "telegram") is None  # not on the ladder
