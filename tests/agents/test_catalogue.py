"""Each model's tokens counted in the encoding its catalogue entry names: on the agent, in
its document, and on each call counted here."""
import sys

import pytest

from agents.backends import get_backend
from agents.backends.base import BackendError, BackendRequest
from agents.backends.command import CommandBackend
from agents.backends.metering import metered, record_call
from agents.catalogue import model_entry, token_encoding
from agents.models import Agent
from agents.services import agent_import_document
from core.errors import DocumentError
from engine.tokens import TokenCounter
from tests.engine.test_tokens import MIXED

BASE = {"name": "Reader", "version": "1.0.0", "type": "business", "status": "active",
        "prompt_config": {"system_prompt": "You read."}, "capabilities": {"skills": ["read"]}}
O200K, CL100K = TokenCounter("o200k_base").count(MIXED), TokenCounter("cl100k_base").count(MIXED)


@pytest.fixture
def hosted(settings):
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "hosted": {"kind": "openai_compatible", "base_url": "http://h/v1"}}
    settings.MODEL_OVERRIDES = {}
    return settings


def test_it_names_each_models_encoding_from_the_catalogue(hosted):
    assert model_entry("hosted", "gpt-4o-mini").encoding == "o200k_base"
    assert token_encoding("hosted", "gpt-4o-mini", "cl100k_base") == "o200k_base"  # the model's, not the row's
    assert token_encoding("hosted", "gpt-4") == "cl100k_base"
    assert token_encoding("hosted", "ft:gpt-4o-mini:acme::x1") == "o200k_base"  # not priced, still its encoding
    assert token_encoding("hosted", "local-llama", "o200k_base") == "o200k_base"  # none catalogued: the agent's
    assert token_encoding("hosted", "local-llama") == "cl100k_base"
    hosted.MODEL_OVERRIDES = {"local-llama": {"encoding": "o200k_base"}}
    assert token_encoding("hosted", "local-llama") == "o200k_base"


@pytest.mark.django_db
def test_an_agent_is_counted_in_its_models_encoding_and_says_where_it_came_from(hosted, api):
    agent_import_document({**BASE, "agent_id": "Reader", "runtime": {"backend": "hosted", "model": "gpt-4o-mini"}})
    reader = Agent.objects.get(agent_id="Reader")
    assert reader.encoding == reader.token_encoding == "o200k_base"
    assert reader.limit_sources["encoding"] == "gpt-4o-mini's encoding, from tiktoken's model table"
    assert api.viewer.get("/api/agents/Reader").json()["runtime"]["encoding"] == "o200k_base"
    agent_import_document({**BASE, "agent_id": "Reader", "runtime": {"backend": "hosted", "model": "gpt-4o-mini",
                                                                      "encoding": "o200k_base"}})  # stated, the same

    # A row stored with cl100k_base before is counted as its model is, and its document says so.
    Agent.objects.filter(agent_id="Reader").update(encoding="cl100k_base")
    assert Agent.objects.get(agent_id="Reader").token_encoding == "o200k_base"
    assert api.viewer.get("/api/agents/Reader").json()["runtime"]["encoding"] == "o200k_base"

    agent_import_document({**BASE, "agent_id": "Local"})  # the builtin: no model, no catalogued encoding
    local = Agent.objects.get(agent_id="Local")
    assert local.token_encoding == "cl100k_base" and local.limit_sources["encoding"].startswith("Switchyard's default")
    agent_import_document({**BASE, "agent_id": "Stated", "runtime": {"backend": "hosted", "model": "local-llama",
                                                                      "encoding": "o200k_base"}})
    stated = Agent.objects.get(agent_id="Stated")
    assert stated.token_encoding == "o200k_base" and stated.limit_sources["encoding"].startswith("the agent's document")


@pytest.mark.django_db
@pytest.mark.parametrize("runtime, overrides, message", [
    ({"backend": "hosted", "model": "gpt-4o-mini", "encoding": "cl100k_base"}, {},
     "runtime.encoding: the model gpt-4o-mini counts in o200k_base (from tiktoken's model table), not 'cl100k_base'"),
    ({"backend": "builtin", "encoding": "p50k_base"}, {},
     "runtime.encoding: encoding 'p50k_base' is not one Switchyard can count offline (it counts: cl100k_base, "
     "o200k_base)"),
    ({"backend": "hosted", "model": "text-davinci-003"}, {},
     "runtime.encoding: the model text-davinci-003 counts in p50k_base (from tiktoken's model table), but encoding "
     "'p50k_base' is not one Switchyard can count offline"),
    ({"backend": "hosted", "model": "local-llama"}, {"local-llama": {"encoding": "r50k_base"}},
     "runtime.encoding: the model local-llama counts in r50k_base (from the operators' file), but encoding "
     "'r50k_base' is not one Switchyard can count offline"),
])
def test_it_refuses_an_encoding_it_cannot_count_or_that_is_not_the_models(hosted, runtime, overrides, message):
    hosted.MODEL_OVERRIDES = overrides
    with pytest.raises(DocumentError) as refused:
        agent_import_document({**BASE, "agent_id": "Reader", "runtime": runtime})
    assert message in str(refused.value)
    assert not Agent.objects.filter(agent_id="Reader").exists()


def test_a_call_the_server_reports_no_usage_for_is_counted_in_its_models_encoding(settings, chat_server):
    chat_server.reply("ok")  # no usage in the answer
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "quiet": {
        "kind": "openai_compatible", "base_url": chat_server.base_url, "model": "gpt-4o-mini", "max_retries": 0}}
    request = BackendRequest(agent_id="a", skills=[], required_skills=[], system_prompt="", prompt=MIXED,
                             encoding="cl100k_base")  # the agent's row: the catalogue names the model's
    with metered() as meter:
        response = get_backend("quiet").complete(request)
    (call,) = meter.calls
    assert (call.usage, call.encoding, call.as_dict()["encoding"]) == ("counted", "o200k_base", "o200k_base")
    assert response.tokens_in == call.tokens_in == O200K != CL100K


def test_a_command_is_counted_in_its_models_encoding_and_the_builtin_in_its_agents(settings):
    backend = CommandBackend("cli", argv=[sys.executable, "-c", "import sys; sys.stdout.write('\"ok\"')"],
                             model="gpt-4o")
    request = BackendRequest(agent_id="a", skills=[], required_skills=[], system_prompt="", prompt=MIXED)
    with metered() as meter:
        assert backend.complete(request).tokens_in == O200K
        get_backend("builtin").complete(BackendRequest(agent_id="a", skills=[], required_skills=[], system_prompt="",
                                                       prompt=MIXED, encoding="o200k_base"))
    assert [(call.usage, call.encoding, call.tokens_in) for call in meter.calls] == [
        ("counted", "o200k_base", O200K), ("builtin", "o200k_base", O200K)]
    assert record_call(backend="cli", model="gpt-4o", tokens_in=1, tokens_out=1, encoding="o200k_base").encoding is None


def test_a_call_to_a_model_whose_encoding_cannot_be_counted_is_not_made(settings, chat_server):
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "odd": {
        "kind": "openai_compatible", "base_url": chat_server.base_url, "model": "odd-model", "max_retries": 0}}
    settings.MODEL_OVERRIDES = {"odd-model": {"encoding": "p50k_base"}}
    request = BackendRequest(agent_id="a", skills=[], required_skills=[], system_prompt="", prompt="hello")
    with metered() as meter, pytest.raises(BackendError) as refused:
        get_backend("odd").complete(request)
    assert (refused.value.code, refused.value.retryable) == ("ENCODING_UNKNOWN", False)
    assert "model 'odd-model' on 'odd': encoding 'p50k_base' is not one Switchyard can count" in str(refused.value)
    assert chat_server.requests == [] and meter.calls == []
