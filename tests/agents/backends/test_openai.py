import json
import socket
import time

import pytest

from agents.backends import BackendError
from agents.backends.builtin import count_tokens
from agents.backends.openai import OpenAICompatibleBackend, chat_completions_url, parse_reply, retry_after_seconds
from tests.agents.backends.chat_server import backend_request as request


def test_it_sends_a_chat_completion_and_records_the_usage(chat_server, make):
    chat_server.reply('{"verdict": "accept", "comments": "fine"}', usage={"prompt_tokens": 21, "completion_tokens": 9},
                      model="test-model-2025")
    response = make().complete(request(model="gpt-test"))
    assert response.output == {"verdict": "accept", "comments": "fine"}
    assert (response.tokens_in, response.tokens_out) == (21, 9)
    assert (response.backend, response.model) == ("openai", "test-model-2025")
    assert response.text == '{"verdict": "accept", "comments": "fine"}'
    [sent] = chat_server.requests
    assert (sent.method, sent.path) == ("POST", "/v1/chat/completions")
    assert sent.body == {"model": "gpt-test", "max_tokens": 500, "messages": [
        {"role": "system", "content": "You review drafts."}, {"role": "user", "content": "## draft\nRelease notes for 1.2"}]}
    assert sent.header("Content-Type") == "application/json"


def test_it_uses_its_default_model_and_counts_tokens_when_the_server_does_not(chat_server, make):
    chat_server.reply("Looks good to me.")
    response = make().complete(request())
    assert chat_server.requests[0].body["model"] == "test-model"
    assert response.output == {"text": "Looks good to me."}
    assert response.tokens_in == count_tokens("You review drafts.") + count_tokens("## draft\nRelease notes for 1.2")
    assert response.tokens_out == count_tokens("Looks good to me.")
    with pytest.raises(BackendError) as caught:
        make(model="").complete(request())
    assert (caught.value.code, caught.value.retryable) == ("BAD_BACKEND_CONFIG", False)


def test_it_reads_json_replies_also_inside_a_fence():
    assert parse_reply('Here it is:\n```json\n{"a": 1}\n```\nDone.') == {"a": 1}
    assert parse_reply("```\n[1, 2]\n```") == [1, 2]
    assert parse_reply('  {"a": [1]}\n') == {"a": [1]}
    assert parse_reply('"just a string"') == {"text": '"just a string"'}
    assert parse_reply("{not json}") == {"text": "{not json}"}


def test_it_sends_the_key_from_the_environment_at_call_time(chat_server, make, monkeypatch):
    backend = make()
    monkeypatch.delenv("SWITCHYARD_TEST_KEY", raising=False)
    backend.complete(request())
    monkeypatch.setenv("SWITCHYARD_TEST_KEY", "sk-test-123")
    backend.complete(request())
    assert [r.header("Authorization") for r in chat_server.requests] == [None, "Bearer sk-test-123"]
    assert "sk-test-123" not in backend.label


def test_it_retries_429_honouring_retry_after_and_5xx_with_backoff(chat_server, make, sleeps):
    chat_server.fail(429, times=2, retry_after=7).fail(503).reply('{"ok": true}')
    response = make(backoff_seconds=0.5, max_backoff_seconds=5, max_retries=3).complete(request())
    assert response.output == {"ok": True}
    assert [r.answered for r in chat_server.requests] == [429, 429, 503, 200]
    assert sleeps == [5, 5, 2.0]  # Retry-After 7 capped at 5, then 0.5 × 2²


def test_it_gives_up_after_max_retries(chat_server, make, sleeps):
    chat_server.fail(500, times=10, message="overloaded")
    with pytest.raises(BackendError) as caught:
        make(max_retries=2, backoff_seconds=1).complete(request())
    assert (caught.value.code, caught.value.retryable) == ("HTTP_500", True)
    assert "overloaded" in str(caught.value) and "gave up after 3 tries" in str(caught.value)
    assert len(chat_server.requests) == 3 and sleeps == [1, 2]


def test_it_does_not_retry_other_client_errors(chat_server, make, sleeps):
    chat_server.fail(400, message="max_tokens is too large for this model")
    with pytest.raises(BackendError) as caught:
        make().complete(request())
    assert (caught.value.code, caught.value.retryable) == ("HTTP_400", False)
    assert "max_tokens is too large for this model" in str(caught.value)
    assert len(chat_server.requests) == 1 and sleeps == []


def test_it_times_out(chat_server, make):
    chat_server.delay(3)
    started = time.monotonic()
    with pytest.raises(BackendError) as caught:
        make(timeout_seconds=0.3).complete(request())
    assert (caught.value.code, caught.value.retryable) == ("TIMEOUT", True)
    assert time.monotonic() - started < 2 and len(chat_server.requests) == 1


def test_it_refuses_a_malformed_response(chat_server, make):
    chat_server.malformed()
    with pytest.raises(BackendError) as caught:
        make().complete(request())
    assert caught.value.code == "BAD_RESPONSE" and "not JSON" in str(caught.value)


def test_it_retries_when_nobody_listens(sleeps):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    backend = OpenAICompatibleBackend("openai", base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=1,
                                      sleep=sleeps.append)
    with pytest.raises(BackendError) as caught:
        backend.complete(request())
    assert (caught.value.code, caught.value.retryable) == ("CONNECTION", True) and sleeps == [1.0]


def test_it_asks_the_model_for_a_summary(chat_server, make):
    chat_server.reply(json.dumps({"summary": "Attention suffices."}))
    assert make().summarize("A long text. " * 50, 40, model="small") == "Attention suffices."
    body = chat_server.requests[0].body
    assert body["model"] == "small" and "about 40 tokens" in body["messages"][1]["content"]
    chat_server.reply("Plain summary.")
    assert make().summarize("text", 10) == "Plain summary."


def test_it_joins_base_urls_carefully():
    assert chat_completions_url("http://h:8000") == "http://h:8000/v1/chat/completions"
    assert chat_completions_url("http://h:8000/") == "http://h:8000/v1/chat/completions"
    assert chat_completions_url("https://api.example.com/v1/") == "https://api.example.com/v1/chat/completions"
    assert chat_completions_url("https://x.example/openai/v1beta") == "https://x.example/openai/v1beta/chat/completions"
    assert chat_completions_url("https://x.example/v1/chat/completions") == "https://x.example/v1/chat/completions"
    with pytest.raises(BackendError):
        chat_completions_url("ftp://example.com")


@pytest.mark.parametrize("base_url", [
    "https://user:sk-SECRET-42@api.example.com/v1", "https://api.example.com/v1?key=sk-SECRET-42",
    "api.example.com/v1?key=sk-SECRET-42", "user:sk-SECRET-42@api.example.com",
    "https://api.example.com/v1#sk-SECRET-42",
])
def test_it_refuses_a_base_url_holding_a_secret_without_repeating_it(base_url):
    with pytest.raises(BackendError) as caught:
        OpenAICompatibleBackend("hosted", base_url=base_url)
    assert (caught.value.code, caught.value.retryable) == ("BAD_BACKEND_CONFIG", False)
    assert str(caught.value).startswith("backend 'hosted': base_url must ") and "SECRET" not in str(caught.value)


def test_it_reads_retry_after_as_seconds_or_a_date():
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


def test_the_chat_server_answers_other_paths_with_404_and_computes_replies(chat_server):
    chat_server.respond_with(lambda body: {"echo": body["messages"][-1]["content"]})
    backend = OpenAICompatibleBackend("openai", base_url=chat_server.base_url, model="m")
    assert backend.complete(request(prompt="hello")).output == {"echo": "hello"}
    wrong = OpenAICompatibleBackend("openai", base_url=f"http://127.0.0.1:{chat_server.port}/v2", model="m")
    with pytest.raises(BackendError) as caught:
        wrong.complete(request())
    assert caught.value.code == "HTTP_404" and not caught.value.retryable


def test_it_sends_the_dispatch_and_one_key_per_call_the_same_in_every_try_and_dispatch(chat_server, make, sleeps):
    from agents.backends.dispatch import dispatched

    chat_server.fail(503).fail(409, message="a request with this key is being processed").reply('{"ok": true}')
    with dispatched(41, 1):
        make().complete(request())
    with dispatched(41, 2):
        make().complete(request())
    make().complete(request())
    first, retried, answered, again, alone = chat_server.requests
    assert [r.answered for r in chat_server.requests] == [503, 409, 200, 200, 200], "a 409 to a keyed call is retried"
    key = first.header("Idempotency-Key")
    assert key.startswith("switchyard-41-") and retried.header("Idempotency-Key") == key
    assert answered.header("Idempotency-Key") == again.header("Idempotency-Key") == key
    assert [r.header("X-Switchyard-Dispatch") for r in (first, answered, again)] == ["1", "1", "2"]
    assert alone.header("Idempotency-Key") is None and alone.header("X-Switchyard-Dispatch") is None


def test_it_does_not_retry_a_409_to_a_call_without_a_key(chat_server, make, sleeps):
    chat_server.fail(409, message="conflict")
    with pytest.raises(BackendError) as caught:
        make().complete(request())
    assert (caught.value.code, caught.value.retryable) == ("HTTP_409", False) and len(chat_server.requests) == 1
