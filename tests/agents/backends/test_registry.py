import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.backends import BackendError, BackendRequest, get_backend
from agents.backends.builtin import BuiltinBackend
from agents.backends.command import CommandBackend
from agents.backends.openai import OpenAICompatibleBackend

ROOT = Path(__file__).resolve().parents[3]


def request() -> BackendRequest:
    return BackendRequest(agent_id="a", skills=["draft"], required_skills=["draft"], system_prompt="", prompt="hi")


def test_it_builds_the_builtin_backend_once():
    backend = get_backend("builtin")
    assert isinstance(backend, BuiltinBackend) and get_backend("builtin") is backend


def test_it_names_the_available_backends_when_one_is_unknown(settings):
    settings.LLM_BACKENDS = {"builtin": {"kind": "builtin"}, "local": {"kind": "command", "argv": ["llm"]}}
    with pytest.raises(BackendError) as caught:
        get_backend("shell")
    assert (caught.value.code, caught.value.retryable) == ("UNKNOWN_BACKEND", False)
    assert "'shell'" in str(caught.value) and "builtin, local" in str(caught.value)


def test_it_builds_each_kind_from_settings(settings, chat_server, monkeypatch):
    monkeypatch.setenv("SWITCHYARD_TEST_KEY", "sk-registry")
    settings.LLM_BACKENDS = {
        "builtin": {"kind": "builtin"},
        "openai": {"kind": "openai_compatible", "base_url": chat_server.base_url, "api_key_env": "SWITCHYARD_TEST_KEY",
                   "model": "m", "timeout_seconds": 5, "max_retries": 0},
        "local": {"kind": "command", "argv": [sys.executable, "-c", "print('{\"ok\": 1}')"], "timeout_seconds": 5},
    }
    openai = get_backend("openai")
    assert isinstance(openai, OpenAICompatibleBackend) and openai.url == chat_server.url
    assert openai.complete(request()).output == {"ok": True}
    assert chat_server.requests[0].header("Authorization") == "Bearer sk-registry"
    local = get_backend("local")
    assert isinstance(local, CommandBackend) and local.complete(request()).output == {"ok": 1}


def test_it_rebuilds_a_backend_whose_settings_changed(settings):
    settings.LLM_BACKENDS = {"local": {"kind": "command", "argv": ["first"]}}
    first = get_backend("local")
    assert get_backend("local") is first
    settings.LLM_BACKENDS = {"local": {"kind": "command", "argv": ["second"]}}
    assert get_backend("local").argv == ["second"]


def test_it_refuses_a_bad_definition(settings):
    settings.LLM_BACKENDS = {"odd": {"kind": "shell"}, "typo": {"kind": "command", "argv": ["x"], "timeout": 3},
                             "nourl": {"kind": "openai_compatible", "base_url": "not a url"}}
    for name, words in (("odd", "known kinds: builtin, openai_compatible, command"), ("typo", "timeout"), ("nourl", "base_url must be an http:// or https:// URL")):
        with pytest.raises(BackendError) as caught:
            get_backend(name)
        assert caught.value.code == "BAD_BACKEND_CONFIG" and words in str(caught.value)


def run_settings(env: dict) -> subprocess.CompletedProcess:
    script = "import json, project.settings as s; print(json.dumps(s.LLM_BACKENDS))"
    return subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=30,
                          env={**os.environ, **env})


def test_operators_define_the_command_backend_in_the_environment():
    defined = run_settings({"COMMAND_BACKEND_ARGV": '["llm", "-m", "gpt-4o"]', "COMMAND_BACKEND_TIMEOUT_SECONDS": "30",
                            "COMMAND_BACKEND_ENV": "OPENAI_API_KEY"})
    assert json.loads(defined.stdout)["command"] == {"kind": "command", "argv": ["llm", "-m", "gpt-4o"],
                                                      "timeout_seconds": 30, "env": ["OPENAI_API_KEY"]}
    refused = run_settings({"COMMAND_BACKEND_ARGV": "llm -m gpt-4o"})
    assert refused.returncode != 0 and "must be a JSON list of non-empty strings" in refused.stderr
