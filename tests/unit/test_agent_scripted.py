"""The scripted agent: the default conversation, turn by turn and end to end."""

from __future__ import annotations

from dataclasses import replace

import pytest

from relay.agents.base import AgentConfigError, AgentError, make_agent
from relay.agents.scripted import ScriptedAgent
from relay.core.turns import Action, ContextMessage, ContextTodo, TurnReason, validate_actions

A = Action


def scripted(**settings: str) -> ScriptedAgent:
    agent = make_agent("scripted", {"timeout": "60s", **settings})
    assert isinstance(agent, ScriptedAgent)
    return agent


def test_first_message_greets_with_the_objective_and_asks_the_first_todo(make_context):
    actions = scripted().run(make_context())
    assert actions == [
        A.mark_todo_item(1, "in_progress"),
        A.send_message(
            "Hello! I'm getting in touch about the order you placed last week. "
            "Could you help me with this: Delivery date"
        ),
    ]


def test_first_message_without_todos_only_greets(make_context):
    actions = scripted().run(make_context(todos=[]))
    assert actions == [
        A.send_message("Hello! I'm getting in touch about the order you placed last week.")
    ]


def test_reply_completes_the_todo_in_progress_and_asks_the_next(make_context):
    context = make_context(
        TurnReason.REPLY,
        todos=[("Delivery date", "in_progress"), "Invoice address"],
        new=["Tuesday the 14th"],
    )
    assert scripted().run(context) == [
        A.mark_todo_item(1, "completed", answer="Tuesday the 14th"),
        A.set_state("answer:1", "Tuesday the 14th"),
        A.mark_todo_item(2, "in_progress"),
        A.send_message("Could you help me with this: Invoice address"),
    ]


def test_reply_without_a_todo_in_progress_answers_the_first_pending(make_context):
    context = make_context(
        TurnReason.REPLY,
        todos=[("Delivery date", "completed"), "Invoice address", "Phone"],
        new=["12 Rue de la Paix"],
    )
    actions = scripted().run(context)
    assert actions[:2] == [
        A.mark_todo_item(2, "completed", answer="12 Rue de la Paix"),
        A.set_state("answer:2", "12 Rue de la Paix"),
    ]
    assert actions[2] == A.mark_todo_item(3, "in_progress")


def test_reply_to_the_last_todo_thanks_and_ends(make_context):
    context = make_context(
        TurnReason.REPLY,
        todos=[("Delivery date", "completed"), ("Invoice address", "in_progress")],
        new=["12 Rue de la Paix", "Paris"],
    )
    assert scripted().run(context) == [
        A.mark_todo_item(2, "completed", answer="12 Rue de la Paix\nParis"),
        A.set_state("answer:2", "12 Rue de la Paix\nParis"),
        A.send_message("Thank you, that's everything I needed. Have a good day!"),
        A.end_conversation("completed"),
    ]


def test_skipped_todos_are_not_asked(make_context):
    context = make_context(
        TurnReason.REPLY,
        todos=[("Delivery date", "in_progress"), ("Invoice address", "skipped")],
        new=["Monday"],
    )
    assert scripted().run(context)[-1] == A.end_conversation("completed")


@pytest.mark.parametrize(
    "text",
    ["Can I talk to a human?", "a real PERSON please", "Operator!", "put me through to an agent"],
)
def test_a_request_for_a_person_asks_for_intervention(make_context, text):
    context = make_context(TurnReason.REPLY, todos=[("Delivery date", "in_progress")], new=[text])
    actions = scripted().run(context)
    assert [a.name for a in actions] == ["request_human_intervention"]
    assert text in actions[0].args["reason"]


def test_words_that_merely_contain_a_trigger_are_answers(make_context):
    context = make_context(
        TurnReason.REPLY, todos=[("Delivery date", "in_progress")], new=["Personally, Monday"]
    )
    assert scripted().run(context)[0] == A.mark_todo_item(
        1, "completed", answer="Personally, Monday"
    )


def test_follow_up_names_the_question_and_counts(make_context):
    context = make_context(
        TurnReason.FOLLOW_UP,
        todos=[("Delivery date", "in_progress")],
        follow_up_number=2,
        max_followups=5,
    )
    assert scripted().run(context) == [
        A.send_message(
            "Just following up (reminder 2 of 5). Could you help me with this: Delivery date"
        )
    ]


def test_follow_up_without_todos_repeats_the_greeting(make_context):
    context = make_context(TurnReason.FOLLOW_UP, todos=[], follow_up_number=1, max_followups=3)
    [action] = scripted().run(context)
    assert action.args["text"].startswith("Just following up (reminder 1 of 3). Hello!")


def test_resume_re_asks_the_current_todo(make_context):
    context = make_context(TurnReason.RESUME, todos=[("a", "completed"), ("b", "in_progress")])
    assert scripted().run(context) == [A.send_message("Could you help me with this: b")]


def test_resume_with_everything_done_thanks_and_ends(make_context):
    context = make_context(TurnReason.RESUME, todos=[("a", "completed"), ("b", "skipped")])
    assert [a.name for a in scripted().run(context)] == ["send_message", "end_conversation"]


def test_resume_with_new_messages_handles_them_as_a_reply(make_context):
    context = make_context(
        TurnReason.RESUME, todos=[("a", "in_progress"), "b"], new=["an answer to a"]
    )
    resumed = scripted().run(context)
    assert resumed == scripted().run(replace(context, reason=TurnReason.REPLY))
    assert resumed[1] == A.set_state("answer:1", "an answer to a")


def test_operator_messages_are_not_taken_as_answers(make_context):
    context = make_context(
        TurnReason.REPLY, todos=[("a", "in_progress")], new=[("operator", "Sorry for the delay")]
    )
    assert scripted().run(context) == [A.send_message("Could you help me with this: a")]


def test_templates_come_from_settings(make_context):
    agent = scripted(
        greeting="Hi {contact}, about {objective}:",
        question="{todo}?",
        followup="Reminder {n}/{max}: {question}",
        thanks="Merci!",
    )
    assert agent.run(make_context())[-1] == A.send_message(
        "Hi ada@example.com, about the order you placed last week: Delivery date?"
    )
    follow = make_context(TurnReason.FOLLOW_UP, follow_up_number=1, max_followups=2)
    assert agent.run(follow)[-1] == A.send_message("Reminder 1/2: Delivery date?")
    done = make_context(TurnReason.REPLY, todos=[("x", "in_progress")], new=["y"])
    assert A.send_message("Merci!") in agent.run(done)


def test_an_unknown_template_field_is_a_clear_error():
    with pytest.raises(AgentConfigError, match=r"'greeting' uses unknown field \{name\}"):
        scripted(greeting="Hello {name}")


def test_a_broken_template_is_a_clear_error():
    with pytest.raises(AgentError, match="'thanks' is not a valid format string"):
        scripted(thanks="Thanks {")


def test_the_same_context_gives_the_same_actions(make_context):
    context = make_context(TurnReason.REPLY, todos=[("a", "in_progress"), "b"], new=["yes"])
    assert scripted().run(context) == scripted().run(context)


def test_a_whole_conversation_runs_to_completion(make_context):
    """Drive the agent the way the engine does, applying each validated turn."""
    agent = scripted()
    context = make_context(todos=["Delivery date", "Invoice address", "Phone number"])
    sent: list[str] = []
    answers = iter(["Tuesday", "12 Rue de la Paix", "+33 1 23 45 67 89"])
    for _turn in range(10):
        plan = validate_actions(agent.run(context), {t.id for t in context.todos})
        sent += plan.messages
        status = dict(plan.todo_updates)
        todos = tuple(
            ContextTodo(t.id, t.text, str(status.get(t.id, t.status))) for t in context.todos
        )
        if plan.end_reason:
            break
        reply = ContextMessage(len(sent) + 100, "inbound", "contact", next(answers), "")
        context = replace(context, reason=TurnReason.REPLY, todos=todos, new_messages=(reply,))
    assert plan.end_reason == "completed"
    assert [t.status for t in todos] == ["completed"] * 3
    assert len(sent) == 4
    assert sent[-1].startswith("Thank you")


def test_a_todo_phrased_as_a_question_is_asked_as_written(make_context):
    context = make_context(todos=["Is 12 Harbour Street the right address? "])
    assert scripted().run(context)[-1] == A.send_message(
        "Hello! I'm getting in touch about the order you placed last week. "
        "Is 12 Harbour Street the right address?"
    )
    custom = scripted(question="Q: {todo}")
    assert (
        custom.run(context)[-1].args["text"].endswith("Q: Is 12 Harbour Street the right address?")
    )
