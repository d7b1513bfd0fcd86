"""Small pure pieces: durations, opt-out keywords, agent actions, contact addresses."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from relay.core.durations import MAX_SECONDS, format_duration, parse_duration
from relay.core.errors import InvalidInput
from relay.core.optout import is_opt_in, is_opt_out
from relay.core.turns import Action, TurnPlan, actions_from_json, validate_actions
from relay.core.values import Scope, TodoStatus, split_scoped_key
from relay.engine.contacts.addresses import normalise_address

# -- durations -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("30m", 1800),
        ("2h", 7200),
        ("1d", 86400),
        ("1w", 604800),
        ("1h30m", 5400),
        ("1h 30m", 5400),
        (" 2H ", 7200),
        ("45", 45),
        ("1d2h3m4s", 93784),
    ],
)
def test_parse_duration(text: str, seconds: int) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize(
    "text",
    [
        *("", "  ", "abc", "5x", "0s", "0", "-5m", "m30", "30mm", "1.5h", "2 hours", "h"),
        *("²", "٣m", "3651d", "9" * 30),
    ],
)
def test_parse_duration_refuses_bad_input(text: str) -> None:
    with pytest.raises(InvalidInput, match="duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(90, "1m30s"), (5400, "1h30m"), (86400, "1d"), (93784, "1d2h3m4s"), (0, "0s"), (1, "1s")],
)
def test_format_duration(seconds: int, text: str) -> None:
    assert format_duration(timedelta(seconds=seconds)) == text


@given(st.integers(min_value=1, max_value=MAX_SECONDS))
def test_format_then_parse_is_the_identity(seconds: int) -> None:
    delta = timedelta(seconds=seconds)
    assert parse_duration(format_duration(delta)) == delta


@given(
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=100), st.sampled_from("smhdw")),
        min_size=1,
        max_size=5,
    )
)
def test_parse_then_format_is_canonical(parts: list[tuple[int, str]]) -> None:
    text = "".join(f"{n}{unit}" for n, unit in parts)
    sizes = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    total = sum(n * sizes[unit] for n, unit in parts)
    if total == 0:
        with pytest.raises(InvalidInput):
            parse_duration(text)
        return
    parsed = parse_duration(text)
    assert parsed == timedelta(seconds=total)
    assert parse_duration(format_duration(parsed)) == parsed


@given(st.text(max_size=20))
@example("²")  # str.isdigit() is true for it, int() refuses it
@example("1²m")
@example("99999999999999999999d")
def test_parse_duration_fails_only_with_invalid_input(text: str) -> None:
    try:
        parsed = parse_duration(text)
    except InvalidInput:
        return
    assert parsed > timedelta(0)


# -- opt-out keywords ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "STOP",
        "stop",
        "Stop.",
        "Stop. Thank you",
        "please stop",
        "UNSUBSCRIBE me",
        "quit",
        "End",
        "Stop texting me!",
        "OK, stop please",
    ],
)
def test_opt_out_keywords_are_recognised(text: str) -> None:
    assert is_opt_out(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "...",
        "Yes, Tuesday works",
        "I can't stop thinking about your offer, tell me more",
        "Let's not end the call before we agree",
        "stopwatch",
        "START",
        "End of May works for me",
        "Cancel the delivery and send it on Friday",
        "Stop by on Tuesday",
    ],
)
def test_ordinary_messages_are_not_opt_outs(text: str) -> None:
    assert not is_opt_out(text)


def test_opt_in_keywords() -> None:
    assert is_opt_in("START")
    assert is_opt_in("unstop")
    assert not is_opt_in("STOP")
    assert not is_opt_in("I will start the project next week, thanks a lot")


def test_custom_keywords_replace_the_defaults() -> None:
    assert is_opt_out("halt", ["HALT"])
    assert not is_opt_out("stop", ["HALT"])


# -- agent actions -----------------------------------------------------------------------

TODOS = {1, 2}


@pytest.mark.parametrize(
    ("action", "match"),
    [
        (Action("send_message", {}), "text"),
        (Action("send_message", {"text": "   "}), "text"),
        (Action("send_message", {"text": 5}), "text"),
        (Action("mark_todo_item", {"todo_id": "one", "status": "completed"}), "not a number"),
        (Action("mark_todo_item", {"todo_id": 9, "status": "completed"}), "unknown todo"),
        (Action("mark_todo_item", {"todo_id": 1, "status": "done"}), "invalid status"),
        (Action("mark_todo_item", {"status": "completed"}), "todo_id"),
        (Action("request_human_intervention", {}), "reason"),
        (Action("request_human_intervention", {"reason": ""}), "reason"),
        (Action("schedule_next_heartbeat", {"delay": "soon"}), "duration"),
        (Action("schedule_next_heartbeat", {"delay": ["2h"]}), "duration"),
        (Action("schedule_next_heartbeat", {}), "duration"),
        (Action("schedule_next_heartbeat", {"delay": True}), "duration"),
        (Action("set_state", {"value": 1}), "key"),
        (Action("teleport", {}), "unknown action"),
    ],
    ids=lambda value: value.name if isinstance(value, Action) else value,
)
def test_each_invalid_action_is_refused(action: Action, match: str) -> None:
    with pytest.raises(InvalidInput, match=match):
        validate_actions([Action.send_message("fine"), action], TODOS)


def test_a_turn_cannot_both_end_and_ask_for_help() -> None:
    with pytest.raises(InvalidInput, match="both"):
        validate_actions(
            [Action.end_conversation(), Action.request_human_intervention("stuck")], TODOS
        )


def test_a_valid_plan_is_folded_into_a_turn_plan() -> None:
    plan = validate_actions(
        [
            Action.send_message("  Hello!  "),
            Action.mark_todo_item(1, "completed"),
            Action("mark_todo_item", {"todo_id": "2", "status": "in_progress"}),
            Action.schedule_next_heartbeat("2h"),
            Action.set_state("contact:tz", "Europe/Madrid"),
            Action("place_call", {}),
            Action.send_message("Second"),
        ],
        TODOS,
    )
    assert plan.messages == ("Hello!", "Second")
    assert plan.todo_updates == ((1, TodoStatus.COMPLETED), (2, TodoStatus.IN_PROGRESS))
    assert plan.next_heartbeat == timedelta(hours=2)
    assert plan.state_updates == (("contact:tz", "Europe/Madrid"),)
    assert len(plan.notes) == 1 and "place_call" in plan.notes[0]
    assert plan.end_reason is None and plan.intervention_reason is None


def test_end_conversation_defaults_its_reason_and_numbers_are_seconds() -> None:
    plan = validate_actions(
        [Action("end_conversation", {}), Action("schedule_next_heartbeat", {"delay": 90})], set()
    )
    assert plan.end_reason == "completed"
    assert plan.next_heartbeat == timedelta(seconds=90)


def test_an_empty_turn_is_an_empty_plan() -> None:
    assert validate_actions([], TODOS) == TurnPlan()


def test_actions_from_json_reads_the_wire_form() -> None:
    actions = actions_from_json(
        {
            "actions": [
                {"name": "send_message", "args": {"text": "hi"}},
                {"name": "end_conversation", "reason": "done"},
            ]
        }
    )
    assert actions == [Action.send_message("hi"), Action.end_conversation("done")]


@pytest.mark.parametrize(
    "data",
    [
        "send_message",
        {"actions": "x"},
        {"no_actions": []},
        [{"args": {}}],
        [{"name": 3}],
        [{"name": "send_message", "args": ["hi"]}],
    ],
)
def test_actions_from_json_refuses_malformed_output(data: object) -> None:
    with pytest.raises(InvalidInput):
        actions_from_json(data)


# -- scoped state keys ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "scope"),
    [
        ("app:greeting", Scope.APP),
        ("contact:tz", Scope.CONTACT),
        ("temp:draft", Scope.TEMP),
        ("step", Scope.INSTANCE),
        ("application:x", Scope.INSTANCE),
    ],
)
def test_split_scoped_key(key: str, scope: Scope) -> None:
    assert split_scoped_key(key) == (scope, key)


# -- contact addresses ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["+1 555 123 0001", "+15551230001", "(555) 123-0001", "555.123.0001", " +1-555-123-0001 "],
)
def test_one_phone_number_written_many_ways_is_one_address(text: str) -> None:
    address = normalise_address(text, "US")
    assert address.value == "+15551230001"
    assert address.kind == "phone"


def test_the_default_region_applies_to_national_numbers() -> None:
    assert normalise_address("020 7946 0018", "GB").value == "+442079460018"
    assert normalise_address("+44 20 7946 0018", "US").value == "+442079460018"


def test_email_addresses_are_validated_and_lower_cased() -> None:
    address = normalise_address("  Ann.Lee@Example.COM ", "US")
    assert address.value == "ann.lee@example.com"
    assert address.kind == "email"
    assert normalise_address("ann.lee@example.com").value == "ann.lee@example.com"


@pytest.mark.parametrize("text", ["", "   ", "nope", "a@", "@example.com", "ann@@x.com", "123"])
def test_invalid_addresses_are_refused(text: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        normalise_address(text, "US")
    assert "\n" not in refused.value.message
    assert refused.value.exit_code == 2


# -- subjects ----------------------------------------------------------------------------------


def test_the_default_subject_is_the_objectives_first_sentence() -> None:
    from relay.core.subjects import clean_subject, subject_from_objective

    assert (
        subject_from_objective("confirm the delivery date of order 1042. Be polite.")
        == "Confirm the delivery date of order 1042"
    )
    assert subject_from_objective("\n  ask about   the invoice:\nmore") == "Ask about the invoice"
    long = subject_from_objective("find out " + "whether the warehouse can take " * 5)
    assert long is not None and len(long) <= 60 and long.endswith("…")
    assert subject_from_objective("   ") is None
    assert clean_subject("Your order\r\nBcc: x") == "Your order Bcc: x"
