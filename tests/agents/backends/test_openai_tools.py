"""The OpenAI-compatible backend with tools: function definitions out, tool calls back (whole
or streamed), the conversation so far sent as assistant and tool messages."""
import pytest

from agents.backends.openai import function_names
from tests.agents.backends.chat_server import ToolCalls
from tests.agents.backends.chat_server import backend_request as request

SEARCH = {"name": "builtin.knowledge_search", "description": "Search atoms",
          "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}
ECHO = {"name": "demo.echo", "description": "Echo", "input_schema": {"type": "object"}}


@pytest.mark.parametrize("stream", [False, True])
def test_it_offers_the_tools_as_functions_and_reads_the_calls_asked_for(chat_server, make, stream):
    chat_server.reply_once(ToolCalls([("builtin__knowledge_search", {"query": "budget"}),
                                      ("demo__echo", {"text": "hi"})]))
    response = make(stream=stream).complete(request(tools=[SEARCH, ECHO]))
    assert response.output is None and response.text == ""
    assert [(call["name"], call["arguments"]) for call in response.tool_calls] == [
        ("builtin.knowledge_search", {"query": "budget"}), ("demo.echo", {"text": "hi"})]
    assert len({call["id"] for call in response.tool_calls}) == 2
    [sent] = chat_server.requests
    assert sent.body["tools"] == [
        {"type": "function", "function": {"name": "builtin__knowledge_search", "description": "Search atoms",
                                          "parameters": SEARCH["input_schema"]}},
        {"type": "function", "function": {"name": "demo__echo", "description": "Echo",
                                          "parameters": {"type": "object"}}}]
    assert response.tokens_in > 0 and response.tokens_out > 0  # counted: the server sent no usage


def test_it_sends_the_conversation_so_far_as_assistant_and_tool_messages(chat_server, make):
    chat_server.reply('{"answer": "42"}')
    transcript = [
        {"role": "assistant", "text": "", "tool_calls": [{"id": "c1", "name": "demo.echo", "arguments": {"x": 1}}]},
        {"role": "tool", "id": "c1", "name": "demo.echo", "status": "success", "content": {"x": 1}},
    ]
    response = make().complete(request(tools=[ECHO], transcript=transcript))
    assert response.output == {"answer": "42"} and response.tool_calls == []
    messages = chat_server.requests[0].body["messages"]
    assert messages[2:] == [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "demo__echo", "arguments": '{"x": 1}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"x": 1}'}]


def test_arguments_that_are_not_a_json_object_come_back_as_the_text_sent(chat_server, make):
    chat_server.reply_once(ToolCalls([("demo__echo", "{not json"), ("demo__echo", "[1, 2]"), ("nowhere", {})]))
    response = make().complete(request(tools=[ECHO]))
    assert [(call["name"], call["arguments"]) for call in response.tool_calls] == [
        ("demo.echo", "{not json"), ("demo.echo", "[1, 2]"), ("nowhere", {})]  # the loop refuses them, typed


def test_function_names_are_what_the_api_allows_and_unique():
    names = function_names(["a.b", "a_.b", "a.b.c", "x" * 80 + ".y", "a.b-c"])
    assert names["a.b"] == "a__b" and names["a.b.c"] == "a__b_c" and names["a.b-c"] == "a__b-c"
    assert len(set(names.values())) == 5 and all(len(name) <= 64 for name in names.values())


def test_it_tells_the_model_when_the_agent_allows_one_call_at_a_time(chat_server, make):
    make().complete(request(tools=[ECHO], parallel_tool_calls=False))
    make().complete(request(tools=[ECHO]))
    make().complete(request(parallel_tool_calls=False))  # no tools: nothing to say about them
    assert [sent.body.get("parallel_tool_calls") for sent in chat_server.requests] == [False, None, None]
