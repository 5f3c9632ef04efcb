"""Streamed chat completions: the reply joined from its deltas, the usage the server sent last."""
import json
import time

import pytest

from agents.backends import BackendError, get_backend
from agents.backends.builtin import count_tokens
from agents.backends.config import read_backends_file
from agents.backends.metering import metered, units
from agents.backends.openai import StreamBrokeOff, sse_data
from agents.catalogue import model_entry
from tests.agents.backends.chat_server import backend_request as request

REPLY = '{"verdict": "accept", "comments": "Clear and complete — ship it."}'


@pytest.fixture
def make(make):
    """The backend, streamed."""
    return lambda **options: make(**{"stream": True, **options})


@pytest.fixture
def streamed(settings, chat_server):
    """A streaming backend named in settings, serving a priced model."""
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "streamed": {
        "kind": "openai_compatible", "base_url": chat_server.base_url, "model": "gpt-4o-mini", "stream": True,
        "max_retries": 0}}
    backend = get_backend("streamed")
    assert backend.stream and backend.label.endswith(", streamed")
    return backend


def content_deltas(events) -> list[str]:
    return [chunk["choices"][0]["delta"]["content"] for chunk in events
            if chunk["choices"] and chunk["choices"][0]["delta"].get("content")]


def test_a_streamed_reply_gives_what_the_unstreamed_one_gives(chat_server, make):
    chat_server.reply(REPLY, usage={"prompt_tokens": 40, "completion_tokens": 17}, model="test-model-2025")
    plain, streamed = make(stream=False).complete(request()), make().complete(request())
    assert streamed.output == plain.output == {"verdict": "accept", "comments": "Clear and complete — ship it."}
    assert (streamed.text, streamed.tokens_in, streamed.tokens_out, streamed.backend, streamed.model) == (
        plain.text, plain.tokens_in, plain.tokens_out, plain.backend, plain.model) == (
        REPLY, 40, 17, "openai", "test-model-2025")
    plain_sent, streamed_sent = chat_server.requests
    assert "stream" not in plain_sent.body and plain_sent.events == []  # unstreamed: as before
    assert streamed_sent.body == {**plain_sent.body, "stream": True, "stream_options": {"include_usage": True}}
    assert streamed_sent.header("Accept") == "text/event-stream"
    assert len(content_deltas(streamed_sent.events)) == 3 and "".join(content_deltas(streamed_sent.events)) == REPLY


def test_a_summary_is_streamed_too(chat_server, make):
    chat_server.reply(json.dumps({"summary": "Attention suffices."}))
    assert make().summarize("A long text. " * 50, 40, model="small") == "Attention suffices."
    assert chat_server.requests[0].body["stream"] is True and len(chat_server.requests[0].events) > 3


@pytest.mark.parametrize("usage_in", ["final", "every"])
def test_the_calls_usage_is_the_last_the_stream_sent_never_a_sum_of_chunks(streamed, chat_server, usage_in):
    chat_server.reply(REPLY, usage={"prompt_tokens": 1234, "completion_tokens": 56}, usage_in=usage_in)
    with metered() as meter:
        response = streamed.complete(request())
    (call,) = meter.calls
    assert (call.backend, call.model, call.tokens_in, call.tokens_out, call.cached_in, call.usage) == (
        "streamed", "gpt-4o-mini", 1234, 56, 0, "reported")
    assert (response.tokens_in, response.tokens_out) == (1234, 56)
    assert call.cost == units(model_entry("streamed", "gpt-4o-mini").cost(1234, 56)) > 0

    sent = [chunk["usage"] for chunk in chat_server.requests[0].events if chunk.get("usage")]
    if usage_in == "final":  # OpenAI: one chunk with no choices, after the content
        assert len(sent) == 1 and chat_server.requests[0].events[-1]["choices"] == []
    else:  # vLLM's continuous usage stats: cumulative in every chunk, the last the total
        assert len(sent) == len(chat_server.requests[0].events) > 3
        assert [usage["completion_tokens"] for usage in sent] == sorted(usage["completion_tokens"] for usage in sent)
        assert sum(usage["prompt_tokens"] for usage in sent) > 1234 and sent[-1]["completion_tokens"] == 56


@pytest.mark.parametrize("usage_in", ["final", "every"])
def test_cached_input_tokens_in_a_streams_usage_are_priced_as_cached(streamed, chat_server, usage_in):
    chat_server.reply(REPLY, usage_in=usage_in, usage={"prompt_tokens": 2000, "completion_tokens": 10,
                                                       "prompt_tokens_details": {"cached_tokens": 1536}})
    with metered() as meter:
        streamed.complete(request())
    (call,) = meter.calls
    assert (call.tokens_in, call.tokens_out, call.cached_in, call.usage) == (2000, 10, 1536, "reported")
    entry = model_entry("streamed", "gpt-4o-mini")
    assert call.cost == units(entry.cost(2000, 10, 1536)) < units(entry.cost(2000, 10))


@pytest.mark.parametrize("usage, usage_in", [
    ({"prompt_tokens": 1234, "completion_tokens": 56}, "none"),  # the server withholds it
    (None, "final"),  # the server has none
])
def test_a_stream_without_usage_is_counted_here_and_marked_so(streamed, chat_server, usage, usage_in):
    chat_server.reply(REPLY, usage=usage, usage_in=usage_in)
    with metered() as meter:
        response = streamed.complete(request())
    (call,) = meter.calls
    assert not any(chunk.get("usage") for chunk in chat_server.requests[0].events)
    assert call.usage == "counted" and call.cached_in == 0
    assert call.tokens_in == response.tokens_in == count_tokens("You review drafts.") + count_tokens(
        "## draft\nRelease notes for 1.2")
    assert call.tokens_out == response.tokens_out == count_tokens(REPLY)
    assert call.cost == units(model_entry("streamed", "gpt-4o-mini").cost(call.tokens_in, call.tokens_out))


def test_a_stream_that_breaks_off_fails_and_is_never_taken_for_the_whole_reply(chat_server, make, sleeps):
    chat_server.reply(REPLY, usage={"prompt_tokens": 40, "completion_tokens": 17}).break_stream(after=3)
    backend = make()
    with metered() as meter, pytest.raises(BackendError) as caught:
        backend.complete(request())
    assert (caught.value.code, caught.value.retryable) == ("BAD_RESPONSE", True)
    assert "broke off before data: [DONE]" in str(caught.value) and "the reply is incomplete" in str(caught.value)
    assert len(content_deltas(chat_server.requests[0].events)) == 2  # part of the reply came, then nothing
    (call,) = meter.calls  # the server answered and may have billed it: recorded, its cost unknown
    assert (call.usage, call.cost) == ("unknown", None)
    assert sleeps == [] and len(chat_server.requests) == 1  # a stream begun is not sent again
    assert backend.complete(request()).output["verdict"] == "accept"  # the next call is whole again


@pytest.mark.parametrize("event, problem", [
    ("{not json", "that is not JSON: '{not json'"),
    ("[1, 2]", "that is not a JSON object"),
    ('{"choices": {"index": 0}}', "whose choices are not a list"),
    ('{"choices": ["a"]}', "with a choice that is not a delta"),
    ('{"choices": [{"index": 0, "delta": {"content": 7}}]}', "whose delta content is not text"),
])
def test_a_malformed_event_fails_naming_it(chat_server, make, event, problem):
    chat_server.stream_event(event)
    with metered() as meter, pytest.raises(BackendError) as caught:
        make().complete(request())
    assert (caught.value.code, caught.value.retryable) == ("BAD_RESPONSE", False)
    assert f"sent a stream event {problem}" in str(caught.value)
    assert [(call.usage, call.cost) for call in meter.calls] == [("unknown", None)]


def test_an_error_the_server_sends_in_the_stream_fails_with_its_message(chat_server, make):
    chat_server.stream_event(json.dumps({"error": {"message": "the model is overloaded", "type": "server_error"}}))
    with pytest.raises(BackendError) as caught:
        make().complete(request())
    assert (caught.value.code, caught.value.retryable) == ("BAD_RESPONSE", True)
    assert "error in the middle of its stream: the model is overloaded" in str(caught.value)


def test_http_errors_before_the_stream_are_retried_as_ever(chat_server, make, sleeps):
    chat_server.fail(429, retry_after=0).fail(502).reply(REPLY)
    response = make(backoff_seconds=0.5).complete(request())
    assert response.output["verdict"] == "accept"
    assert [r.answered for r in chat_server.requests] == [429, 502, 200] and sleeps == [0, 1.0]
    assert chat_server.requests[-1].events and all(r.body["stream"] for r in chat_server.requests)
    chat_server.fail(400, message="stream_options is not supported")
    with pytest.raises(BackendError) as caught:
        make().complete(request())
    assert (caught.value.code, caught.value.retryable) == ("HTTP_400", False)
    assert "stream_options is not supported" in str(caught.value) and len(chat_server.requests) == 4


def test_it_times_out_before_the_stream_and_in_the_middle_of_it(chat_server, make):
    chat_server.delay(3).break_stream(after=2, stall=3)
    backend = make(timeout_seconds=0.3)
    for where in ("did not answer within 0.3s", "sent nothing for 0.3s in the middle of its stream (after 2 chunk"):
        started = time.monotonic()
        with pytest.raises(BackendError) as caught:
            backend.complete(request())
        assert (caught.value.code, caught.value.retryable) == ("TIMEOUT", True) and where in str(caught.value)
        assert time.monotonic() - started < 2
    assert len(chat_server.requests) == 2


def test_a_server_that_answers_a_stream_request_with_json_is_read_whole(chat_server, make):
    chat_server.reply(REPLY, usage={"prompt_tokens": 40, "completion_tokens": 17}).ignore_stream()
    with metered() as meter:
        response = make().complete(request())
    assert response.output["verdict"] == "accept" and chat_server.requests[0].events == []
    assert (meter.calls[0].tokens_in, meter.calls[0].tokens_out, meter.calls[0].usage) == (40, 17, "reported")


def test_it_reads_server_sent_events_as_the_standard_writes_them():
    lines = [b": keep-alive\n", b"\n", b"event: message\r\n", b"id: 7\r\n", b"data: {\"a\":\r\n", b"data:1}\r\n",
             b"\r\n", b"retry: 100\n", b"data: [DONE]\n"]  # the last blank line lost: [DONE] is still whole
    assert list(sse_data(lines)) == ['{"a":\n1}', "[DONE]"]
    assert list(sse_data([b"data: x\n", b"\n", b"data: [DONE]\n", b"\n", b"data: after\n", b"\n"])) == ["x", "[DONE]"]
    for cut in ([b"data: x\n", b"\n"], [b"data: x\n", b"\n", b"data: [DO"], []):
        with pytest.raises(StreamBrokeOff):
            list(sse_data(cut))


def test_stream_is_an_option_of_the_operators_file_and_of_settings(tmp_path, settings, chat_server):
    path = tmp_path / "backends.toml"
    path.write_text('[backends.hosted]\nkind = "openai_compatible"\nbase_url = "http://h/v1"\nstream = true\n')
    assert read_backends_file(path)["backends"]["hosted"] == {"kind": "openai_compatible", "base_url": "http://h/v1",
                                                             "stream": True}
    settings.LLM_BACKENDS = {"odd": {"kind": "openai_compatible", "base_url": chat_server.base_url, "stream": "yes"},
                             "plain": {"kind": "openai_compatible", "base_url": chat_server.base_url}}
    with pytest.raises(BackendError) as caught:
        get_backend("odd")
    assert caught.value.code == "BAD_BACKEND_CONFIG" and "stream must be true or false" in str(caught.value)
    assert get_backend("plain").stream is False
