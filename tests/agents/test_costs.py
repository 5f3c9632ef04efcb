"""The operators' backends file, the model catalogue and the meter of model calls."""
import subprocess
import sys
from decimal import Decimal

import pytest

from agents.backends import get_backend
from agents.backends.base import BackendRequest
from agents.backends.config import BackendsFileError, read_backends_file
from agents.backends.metering import calling, metered, record_call, usd
from agents.catalogue import model_entry
from tests.executions.conftest import ROOT

GOOD = """
[backends.hosted]
kind = "openai_compatible"
base_url = "https://api.example.com/v1"
api_key_env = "HOSTED_API_KEY"
model = "gpt-4o-mini"

[backends.cli]
kind = "command"
argv = ["llm", "-m", "gpt-4o"]
model = "gpt-4o"

[aliases.flash]
backend = "hosted"
model = "gpt-4o-mini"

[models."local-llama"]
context_window = 32768
max_output = 4096
input_price = "0.02"
output_price = "0.05"
"""


def write(tmp_path, text):
    path = tmp_path / "backends.toml"
    path.write_text(text)
    return path


def test_it_reads_named_backends_aliases_and_model_overrides(tmp_path):
    loaded = read_backends_file(write(tmp_path, GOOD))
    assert loaded["backends"] == {
        "hosted": {"kind": "openai_compatible", "api_key_env": "HOSTED_API_KEY", "base_url": "https://api.example.com/v1",
                   "model": "gpt-4o-mini"},
        "cli": {"kind": "command", "argv": ["llm", "-m", "gpt-4o"], "model": "gpt-4o"},
    }
    assert loaded["aliases"] == {"flash": {"backend": "hosted", "model": "gpt-4o-mini"}}
    assert loaded["models"]["local-llama"] == {"context_window": 32768, "max_output": 4096,
                                               "input_price": Decimal("0.02"), "output_price": Decimal("0.05")}


@pytest.mark.parametrize("text, problem", [
    ('[backends.x]\nkind = "openai_compatible"\napi_key = "sk-1"\nbase_url = "http://h/v1"',
     "backends.x.api_key: a secret is never written here: name the environment variable that holds it"),
    ('[backends.x]\nkind = "openai_compatible"', "backends.x.base_url: required for a openai_compatible backend"),
    ('[backends.x]\nkind = "command"\nargv = ["a"]\nbase_url = "http://h"',
     "backends.x: base_url do not apply to a command backend"),
    ('[backends.x]\nkind = "grpc"', "backends.x.kind: Input should be"),
    ('[aliases.flash]\nbackend = "nowhere"\nmodel = "m"', "aliases.flash.backend: 'nowhere' is not a backend"),
    ('[models.m]\ninput_price = 0.1', 'models.m.input_price: write a price as text ("0.15")'),
    ('[models.m]\ninput_price = "-1"', "models.m.input_price: a price is a number of dollars"),
    ("[backends", "not TOML"),
])
def test_it_refuses_a_file_naming_the_key_and_what_is_wrong(tmp_path, text, problem):
    path = write(tmp_path, text)
    with pytest.raises(BackendsFileError) as refused:
        read_backends_file(path)
    assert str(refused.value).startswith(f"{path}: ") and problem in str(refused.value)


def test_a_bad_file_stops_the_process_at_start(tmp_path):
    path = write(tmp_path, '[backends.x]\nkind = "openai_compatible"')
    checked = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, capture_output=True, text=True,
                             env={"PATH": "/usr/bin:/bin", "SWITCHYARD_BACKENDS_FILE": str(path),
                                  "SWITCHYARD_DATA_DIR": str(tmp_path)})
    assert checked.returncode != 0
    assert f"SWITCHYARD_BACKENDS_FILE {path}: backends.x.base_url: required" in checked.stderr


def test_the_catalogue_prices_published_models_and_takes_the_operators_overrides(settings):
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "hosted": {"kind": "openai_compatible", "base_url": "http://h/v1"}}
    settings.MODEL_OVERRIDES = {"local-llama": {"context_window": 32768, "input_price": Decimal("0.02"),
                                                "output_price": Decimal("0.05")},
                                "gpt-4o": {"output_price": Decimal("9")}}
    mini = model_entry("hosted", "gpt-4o-mini")
    assert (mini.context_window, mini.input_price, mini.output_price, mini.cached_input_price) == (
        128000, Decimal("0.15"), Decimal("0.6"), Decimal("0.075"))
    assert mini.sources["input_price"].startswith("genai-prices 0.2.3 (openai: gpt-4o-mini)")
    assert mini.cost(1_000_000, 1_000_000, cached_in=500_000) == Decimal("0.075") + Decimal("0.0375") + Decimal("0.6")

    overridden = model_entry("hosted", "gpt-4o")
    assert overridden.output_price == Decimal("9") and overridden.sources["output_price"] == "the operators' file"
    assert overridden.input_price == Decimal("2.5")  # the rest stays as published

    local = model_entry("hosted", "local-llama")
    assert local.cost(4321, 65) == Decimal("0.00008967")
    unknown = model_entry("hosted", "nobody-knows-this-model")
    assert not unknown.priced and unknown.cost(10, 10) is None  # no price is not a price of 0

    builtin = model_entry("builtin", "")
    assert builtin.cost(10_000, 10_000) == 0 and builtin.sources["input_price"].startswith("builtin: calls no model")


def test_the_meter_records_each_call_with_its_purpose_and_exact_cost(settings):
    settings.MODEL_OVERRIDES = {"m": {"input_price": Decimal("0.1"), "output_price": Decimal("0.3")}}
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "hosted": {"kind": "openai_compatible", "base_url": "http://h/v1"}}
    with metered() as meter:
        record_call(backend="hosted", model="m", tokens_in=3, tokens_out=1)
        with calling("summary"):
            record_call(backend="hosted", model="m", tokens_in=7, tokens_out=0, usage="counted")
    record_call(backend="hosted", model="m", tokens_in=1, tokens_out=1)  # no meter open: not recorded
    assert [(call.purpose, call.usage) for call in meter.calls] == [("node", "reported"), ("summary", "counted")]
    assert usd(meter.cost) == "0.000001300000" and meter.complete
    with metered() as unpriced:
        record_call(backend="hosted", model="unheard-of", tokens_in=3, tokens_out=1)
    assert unpriced.cost == 0 and not unpriced.complete and unpriced.calls[0].as_dict()["cost"] is None


def test_the_builtin_says_it_costs_nothing():
    request = BackendRequest(agent_id="a", skills=["review"], required_skills=["review"], system_prompt="s",
                             prompt="## draft\nsome text", inputs={"draft": "some text"})
    with metered() as meter:
        get_backend("builtin").complete(request)
    (call,) = meter.calls
    assert (call.backend, call.usage, call.cost) == ("builtin", "builtin", 0) and call.tokens_in > 0


def test_a_server_that_reports_no_usage_is_counted_here_and_marked_so(settings, chat_server):
    chat_server.reply('{"ok": true}')  # no usage in the answer
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "quiet": {
        "kind": "openai_compatible", "base_url": chat_server.base_url, "model": "gpt-4o-mini", "max_retries": 0}}
    request = BackendRequest(agent_id="a", skills=[], required_skills=[], system_prompt="You answer.",
                             prompt="Say ok.")
    with metered() as meter:
        response = get_backend("quiet").complete(request)
    (call,) = meter.calls
    assert call.usage == "counted" and call.tokens_in == response.tokens_in > 0 and call.tokens_out > 0
    assert call.cost == int(model_entry("quiet", "gpt-4o-mini").cost(call.tokens_in, call.tokens_out) * 10**12)


def test_a_compress_model_alias_names_the_backend_and_model_a_compression_calls(settings):
    from types import SimpleNamespace

    from executions.compression import compression_backend

    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "hosted": {"kind": "openai_compatible", "base_url": "http://h/v1"}}
    settings.MODEL_ALIASES = {"flash": {"backend": "hosted", "model": "gpt-4o-mini"}}
    agent = SimpleNamespace(backend="builtin", model="")
    backend, model = compression_backend(agent, "flash")
    assert (backend.name, model) == ("hosted", "gpt-4o-mini")
    backend, model = compression_backend(agent, "pro")  # no alias: the agent's own backend, the builtin
    assert (backend.name, model) == ("builtin", None)


def test_a_meter_refuses_a_call_past_the_nodes_limit_or_to_a_model_with_no_prices(settings):
    from agents.backends.metering import Budget, BudgetExceeded, check_call, units

    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "hosted": {"kind": "openai_compatible", "base_url": "http://h/v1"}}
    settings.MODEL_OVERRIDES = {"m": {"input_price": Decimal("1"), "output_price": Decimal("2")}}
    with metered(Budget(node=units(Decimal("0.003")))) as meter:
        check_call(backend="hosted", model="m", tokens_in=1000, max_tokens=500)  # up to $0.002: allowed
        record_call(backend="hosted", model="m", tokens_in=1000, tokens_out=100)  # spent $0.0012
        with pytest.raises(BudgetExceeded, match=r"past its max_node_cost \$0.003000000000 \(spent \$0.001200000000\)"):
            check_call(backend="hosted", model="m", tokens_in=1000, max_tokens=500)
        with pytest.raises(BudgetExceeded, match="has no prices in the catalogue"):
            check_call(backend="hosted", model="unheard-of", tokens_in=1, max_tokens=1)
    assert len(meter.calls) == 1
    with metered() as free:  # no limit: any call may be made, priced or not
        check_call(backend="hosted", model="unheard-of", tokens_in=10**9, max_tokens=10**9)
    assert free.calls == []


def test_it_bounds_a_calls_input_a_quarter_and_32_tokens_above_the_count_here(settings):
    from agents.backends.metering import Budget, BudgetExceeded, check_call, units

    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "hosted": {"kind": "openai_compatible", "base_url": "http://h/v1"}}
    settings.MODEL_OVERRIDES = {"m": {"input_price": Decimal("1"), "output_price": Decimal("2")}}
    with metered(Budget(node=units(Decimal("0.002")))), pytest.raises(BudgetExceeded) as refused:
        # 1,000 tokens in and 500 out would be $0.002; with the margin, 1,282 in: $0.002282
        check_call(backend="hosted", model="m", tokens_in=1000, max_tokens=500)
    details = refused.value.details
    assert (details["tokens_in"], details["tokens_in_bound"], details["estimate"]) == (1000, 1282, "0.002282000000")


def test_it_refuses_every_call_after_one_whose_reported_cost_took_the_node_past_its_limit(settings):
    from agents.backends.metering import Budget, BudgetExceeded, check_call, units

    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "hosted": {"kind": "openai_compatible", "base_url": "http://h/v1"}}
    settings.MODEL_OVERRIDES = {"m": {"input_price": Decimal("1"), "output_price": Decimal("2")}}
    with metered(Budget(node=units(Decimal("0.01")))) as meter:
        check_call(backend="hosted", model="m", tokens_in=100, max_tokens=100)  # bound: 157 in, 100 out: $0.000357
        with pytest.raises(BudgetExceeded, match=r"^the node run has spent \$0.020020000000, past its max_node_cost "
                                                 r"\$0.010000000000: its last call cost \$0.020020000000 against "
                                                 r"\$0.000357000000 claimed for it \(20000 tokens in, reported, "
                                                 r"100 counted here before the call\)"):
            record_call(backend="hosted", model="m", tokens_in=20_000, tokens_out=10)
        with pytest.raises(BudgetExceeded, match="past its max_node_cost"):
            check_call(backend="hosted", model="m", tokens_in=1, max_tokens=1)
    assert len(meter.calls) == 1 and meter.crossed.details["crossed"] is True


@pytest.mark.django_db
def test_an_agents_window_limits_default_from_its_models_catalogue_entry_and_say_so(settings, api):
    from agents.models import Agent
    from agents.services import agent_import_document

    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "hosted": {"kind": "openai_compatible", "base_url": "http://h/v1"}}
    settings.MODEL_OVERRIDES = {"gpt-4o-mini": {"max_output": 16384}}
    base = {"name": "Reader", "version": "1.0.0", "type": "business", "status": "active",
            "prompt_config": {"system_prompt": "You read."}, "capabilities": {"skills": ["read"]}}
    agent_import_document({**base, "agent_id": "Reader", "runtime": {"backend": "hosted", "model": "gpt-4o-mini"}})
    reader = Agent.objects.get(agent_id="Reader")
    assert (reader.max_input_tokens, reader.max_output_tokens) == (128000 - 16384, 16384)
    assert reader.limit_sources["max_input_tokens"].startswith("gpt-4o-mini's context window of 128000 less")
    assert reader.limit_sources["max_output_tokens"] == "gpt-4o-mini's maximum output, from the operators' file"

    agent_import_document({**base, "agent_id": "Pinned", "runtime": {"backend": "hosted", "model": "gpt-4o-mini"},
                           "context_limits": {"max_input_tokens": 9000}})
    pinned = Agent.objects.get(agent_id="Pinned")
    assert pinned.max_input_tokens == 9000 and pinned.limit_sources["max_input_tokens"] == "the agent's document"
    agent_import_document({**base, "agent_id": "Local"})  # the builtin: no model, the defaults
    assert Agent.objects.get(agent_id="Local").limit_sources["max_input_tokens"].startswith("Switchyard's default")

    detail = api.viewer.get("/api/agents/Reader").json()
    assert detail["limit_sources"] == reader.limit_sources
    assert api.author.put("/api/agents/Reader", detail).status_code == 200  # echoed back, ignored


def test_a_call_the_server_answered_unreadably_is_recorded_with_no_cost(settings, chat_server):
    from agents.backends.base import BackendError

    chat_server.malformed()
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "garbled": {
        "kind": "openai_compatible", "base_url": chat_server.base_url, "model": "gpt-4o-mini", "max_retries": 0}}
    request = BackendRequest(agent_id="a", skills=[], required_skills=[], system_prompt="You answer.", prompt="Say ok.")
    with metered() as meter, pytest.raises(BackendError, match="not JSON"):
        get_backend("garbled").complete(request)
    (call,) = meter.calls
    assert (call.usage, call.cost, call.tokens_out) == ("unknown", None, 0) and not meter.complete
