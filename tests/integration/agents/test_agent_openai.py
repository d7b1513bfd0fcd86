"""The OpenAI-compatible agent against a real HTTP server on loopback."""

from __future__ import annotations

import json

import httpx
import pytest

from relay.agents.base import AgentConfigError, AgentError, TransientAgentError, make_agent
from relay.agents.openai_compat import TOOLS, OpenAIAgent, chat_messages, parse_response
from relay.core.turns import ACTION_NAMES, Action, TurnReason, validate_actions

KEY = "sk-test-0123456789"


def completion(*calls: tuple[str, object], content: str | None = None) -> dict:
    tool_calls = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {
                "name": name,
                "arguments": args if isinstance(args, str) else json.dumps(args),
            },
        }
        for i, (name, args) in enumerate(calls)
    ]
    message = {"role": "assistant", "content": content, "tool_calls": tool_calls or None}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message}],
    }


@pytest.fixture
def agent(chat_server, monkeypatch) -> OpenAIAgent:
    monkeypatch.setenv("RELAY_TEST_OPENAI_KEY", KEY)
    built = make_agent(
        "openai",
        {
            "base_url": chat_server.url + "/",
            "model": "test-model",
            "api_key_env": "RELAY_TEST_OPENAI_KEY",
            "temperature": 0.2,
            "timeout": "5s",
        },
    )
    assert isinstance(built, OpenAIAgent)
    return built


def test_tool_calls_become_actions(agent, chat_server, make_context):
    chat_server.reply(
        200,
        completion(
            ("mark_todo_item", {"todo_id": 1, "status": "in_progress"}),
            ("send_message", {"text": "Hello! When would suit you for delivery?"}),
        ),
    )
    actions = agent.run(make_context())
    assert actions == [
        Action.mark_todo_item(1, "in_progress"),
        Action.send_message("Hello! When would suit you for delivery?"),
    ]
    validate_actions(actions, {1, 2})


def test_the_request_carries_model_tools_and_key(agent, chat_server, make_context):
    chat_server.reply(200, completion(("send_message", {"text": "hi"})))
    agent.run(make_context())
    [request] = chat_server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == f"Bearer {KEY}"
    body = request["body"]
    assert body["model"] == "test-model"
    assert body["temperature"] == 0.2
    assert body["tool_choice"] == "auto"
    assert [t["function"]["name"] for t in body["tools"]] == list(ACTION_NAMES)
    assert all(
        t["type"] == "function" and t["function"]["parameters"]["type"] == "object"
        for t in body["tools"]
    )
    system = body["messages"][0]
    assert system["role"] == "system"
    assert "Objective: the order you placed last week" in system["content"]
    assert "- id 1 [pending] Delivery date" in system["content"]
    assert "opening message" in system["content"]


def test_the_transcript_maps_to_roles_and_flags_new_messages(make_context):
    context = make_context(
        TurnReason.REPLY,
        transcript=[("agent", "When can we deliver?"), ("operator", "Sorry, I'm Bob from sales")],
        new=["Tuesday", "after 5pm"],
    )
    messages = chat_messages(context)
    assert messages[1:] == [
        {"role": "assistant", "content": "When can we deliver?"},
        {"role": "assistant", "content": "[operator] Sorry, I'm Bob from sales"},
        {"role": "user", "content": "[new] Tuesday"},
        {"role": "user", "content": "[new] after 5pm"},
    ]
    # New messages missing from the transcript window are still shown, once.
    trimmed = context.__class__(**{**context.__dict__, "transcript": context.transcript[:1]})
    assert chat_messages(trimmed)[1:] == [messages[1], messages[3], messages[4]]


def test_follow_up_prompt_counts(make_context):
    context = make_context(TurnReason.FOLLOW_UP, follow_up_number=2, max_followups=4)
    assert "follow-up 2 of 4" in chat_messages(context)[0]["content"]


def test_plain_content_is_a_message(agent, chat_server, make_context):
    chat_server.reply(200, completion(content="  Hello there!  "))
    assert agent.run(make_context()) == [Action.send_message("Hello there!")]


def test_tool_calls_win_over_content(agent, chat_server, make_context):
    chat_server.reply(200, completion(("end_conversation", {}), content="(thinking out loud)"))
    assert agent.run(make_context()) == [Action("end_conversation", {})]


@pytest.mark.parametrize("status", [401, 403])
def test_auth_failures_need_a_person_and_never_echo_the_key(
    agent, chat_server, make_context, status
):
    chat_server.reply(status, {"error": {"message": f"Incorrect API key provided: {KEY}"}})
    with pytest.raises(AgentError) as caught:
        agent.run(make_context())
    assert not caught.value.transient
    assert caught.value.message.startswith(f"openai agent: authentication failed (HTTP {status})")
    assert KEY not in caught.value.message
    assert "Incorrect API key provided: ***" in caught.value.message


def test_rate_limit_needs_a_person(agent, chat_server, make_context):
    chat_server.reply(429, {"error": {"message": "You exceeded your current quota"}})
    with pytest.raises(AgentError, match=r"rate limited \(HTTP 429\): You exceeded") as caught:
        agent.run(make_context())
    assert not caught.value.transient


def test_a_server_error_is_transient_and_the_next_call_succeeds(agent, chat_server, make_context):
    chat_server.reply(500, {"error": {"message": "The server had an error"}})
    chat_server.reply(200, completion(("send_message", {"text": "hi"})))
    with pytest.raises(TransientAgentError, match=r"server error \(HTTP 500\)"):
        agent.run(make_context())
    assert agent.run(make_context()) == [Action.send_message("hi")]
    assert len(chat_server.requests) == 2


def test_another_client_error_needs_a_person(agent, chat_server, make_context):
    chat_server.reply(400, {"error": {"message": "model test-model does not support tools"}})
    with pytest.raises(
        AgentError, match=r"request refused \(HTTP 400\): model test-model"
    ) as caught:
        agent.run(make_context())
    assert not caught.value.transient


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (200, b"<html>gateway</html>", "malformed JSON: '<html>gateway</html>'"),
        (200, {"choices": []}, "no choices"),
        (200, completion(("send_message", "{not json")), "send_message has invalid JSON arguments"),
        (200, completion(("send_message", "[1]")), "arguments must be a JSON object"),
        (200, completion(content=""), "neither tool calls nor text"),
    ],
)
def test_malformed_answers_need_a_person(agent, chat_server, make_context, status, body, message):
    chat_server.reply(status, body)
    with pytest.raises(AgentError, match=message) as caught:
        agent.run(make_context())
    assert not caught.value.transient


def test_a_missing_key_variable_is_reported_by_name(agent, chat_server, make_context, monkeypatch):
    monkeypatch.delenv("RELAY_TEST_OPENAI_KEY")
    with pytest.raises(AgentConfigError, match=r"RELAY_TEST_OPENAI_KEY .* is not set"):
        agent.run(make_context())
    assert chat_server.requests == []


def test_no_key_variable_sends_no_authorization(chat_server, make_context):
    chat_server.reply(200, completion(("send_message", {"text": "hi"})))
    make_agent("openai", {"base_url": chat_server.url, "model": "local"}).run(make_context())
    assert "Authorization" not in chat_server.requests[0]["headers"]


def test_an_unreachable_server_is_transient(make_context, unused_port):
    agent = make_agent("openai", {"base_url": f"http://127.0.0.1:{unused_port}/v1", "model": "m"})
    with pytest.raises(TransientAgentError, match="cannot reach"):
        agent.run(make_context())


def test_a_timeout_is_transient(make_context):
    def hang(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    agent = OpenAIAgent(
        "http://model.invalid/v1", "m", timeout=7, transport=httpx.MockTransport(hang)
    )
    with pytest.raises(TransientAgentError, match="did not answer within 7s"):
        agent.run(make_context())


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"model": "m"}, "agent.openai.base_url is not set"),
        ({"base_url": "http://x"}, "agent.openai.model is not set"),
        (
            {"base_url": "http://x", "model": "m", "api_key_env": ""},
            "must name an environment variable",
        ),
        (
            {"base_url": "http://x", "model": "m", "temperature": "hot"},
            "temperature must be a number",
        ),
    ],
)
def test_bad_settings_are_config_errors(settings, message):
    with pytest.raises(AgentConfigError, match=message):
        make_agent("openai", settings)


def test_tools_match_the_action_vocabulary():
    assert tuple(t["function"]["name"] for t in TOOLS) == ACTION_NAMES
    json.dumps(TOOLS)  # plain JSON, as sent


def test_parse_response_accepts_arguments_already_decoded():
    data = {
        "choices": [
            {
                "message": {
                    "tool_calls": [
                        {"function": {"name": "set_state", "arguments": {"key": "k", "value": 1}}}
                    ]
                }
            }
        ]
    }
    assert parse_response(data) == [Action.set_state("k", 1)]
