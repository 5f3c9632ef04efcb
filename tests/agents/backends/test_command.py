import sys
import time
from pathlib import Path

import pytest

from agents.backends import BackendError, BackendRequest
from agents.backends.builtin import count_tokens
from agents.backends.command import CommandBackend

ECHO = """
import json, os, sys
text = sys.stdin.read()
print(json.dumps({"stdin": text, "model": os.environ.get("SWITCHYARD_MODEL"), "node": os.environ.get("SWITCHYARD_NODE_ID"),
                  "secret": os.environ.get("SWITCHYARD_TEST_SECRET"), "shared": os.environ.get("SWITCHYARD_TEST_SHARED")}))
"""


def command(script: str, **options) -> CommandBackend:
    return CommandBackend("command", argv=[sys.executable, "-c", script], **options)


def request(**fields) -> BackendRequest:
    values = dict(agent_id="Drafter", skills=["draft"], required_skills=["draft"], system_prompt="You draft release notes.",
                  prompt="## topic\nSwitchyard 1.2", node_id="draft", model="local-model")
    values.update(fields)
    return BackendRequest(**values)


def test_it_sends_the_prompt_on_stdin_and_reads_json_from_stdout(monkeypatch):
    monkeypatch.setenv("SWITCHYARD_TEST_SECRET", "do-not-leak")
    monkeypatch.setenv("SWITCHYARD_TEST_SHARED", "passed-on")
    backend = command(ECHO, env=["SWITCHYARD_TEST_SHARED"], timeout_seconds=10)
    response = backend.complete(request())
    stdin = "You draft release notes.\n\n## topic\nSwitchyard 1.2"
    assert response.output == {"stdin": stdin, "model": "local-model", "node": "draft", "secret": None, "shared": "passed-on"}
    assert response.tokens_in == count_tokens(stdin) and response.tokens_out == count_tokens(response.text) > 0
    assert (response.backend, response.model) == ("command", "local-model")


def test_it_passes_text_on_as_text():
    backend = command("import sys; sys.stdin.read(); print('Release notes for 1.2')")
    assert backend.complete(request()).output == {"text": "Release notes for 1.2\n"}
    fenced = command("print('Sure:'); print('```json'); print('{\"verdict\": \"accept\"}'); print('```')")
    assert fenced.complete(request()).output == {"verdict": "accept"}


def test_it_reports_a_failing_command_with_the_end_of_stderr():
    backend = command("import sys; sys.stderr.write('x' * 5000 + 'model unavailable'); sys.exit(3)")
    with pytest.raises(BackendError) as caught:
        backend.complete(request())
    assert (caught.value.code, caught.value.retryable) == ("COMMAND_FAILED", True)
    message = str(caught.value)
    assert "exited with status 3" in message and message.endswith("model unavailable") and len(message) < 1200


def test_it_kills_a_command_that_runs_too_long_and_what_it_started(tmp_path):
    pids = tmp_path / "pids"
    script = f"""
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
open({str(pids)!r}, "w").write(f"{{os.getpid()}} {{child.pid}}")
time.sleep(60)
"""
    started = time.monotonic()
    with pytest.raises(BackendError) as caught:
        command(script, timeout_seconds=1).complete(request())
    assert (caught.value.code, caught.value.retryable) == ("TIMEOUT", True)
    assert time.monotonic() - started < 5
    for pid in map(int, pids.read_text().split()):
        assert not alive(pid), f"process {pid} still runs"


def alive(pid: int) -> bool:
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return False
        if state in ("Z", "X"):  # killed, waiting to be reaped by its parent
            return False
        time.sleep(0.05)
    return True


def test_it_refuses_a_command_that_does_not_exist_or_prints_nothing():
    with pytest.raises(BackendError) as caught:
        CommandBackend("command", argv=["/nonexistent/switchyard-llm"]).complete(request())
    assert (caught.value.code, caught.value.retryable) == ("COMMAND_NOT_FOUND", False)
    with pytest.raises(BackendError) as caught:
        command("import sys; sys.stdin.read()").complete(request())
    assert caught.value.code == "BAD_OUTPUT"


def test_it_refuses_a_shell_string_as_argv():
    for argv in ("llm -m gpt", [], ["llm", 3]):
        with pytest.raises(BackendError) as caught:
            CommandBackend("command", argv=argv)
        assert caught.value.code == "BAD_BACKEND_CONFIG"


def test_it_summarizes_through_the_command():
    script = "import json, os, sys; text = sys.stdin.read(); print(json.dumps({'summary': text.split(chr(10))[0], 'task': os.environ['SWITCHYARD_TASK']}))"
    summary = command(script).summarize("A long text.", 30)
    assert summary.startswith("Summarise the following text in about 30 tokens.")


DISPATCH = """
import json, os, sys
sys.stdin.read()
print(json.dumps({"pid": os.getpid(), "dispatch": os.environ.get("SWITCHYARD_DISPATCH"),
                  "key": os.environ.get("SWITCHYARD_IDEMPOTENCY_KEY"), "attempt": os.environ.get("SWITCHYARD_ATTEMPT")}))
"""


def test_it_tells_the_command_its_dispatch_and_key_and_records_its_process():
    from agents.backends.dispatch import dispatched

    backend, recorded = command(DISPATCH), []
    with dispatched(41, 1, on_process=recorded.append):
        first = backend.complete(request()).output
    with dispatched(41, 2, on_process=recorded.append):
        again = backend.complete(request()).output
    assert (first["attempt"], first["dispatch"], again["attempt"], again["dispatch"]) == ("1", "1", "1", "2")
    assert first["key"] == again["key"] and first["key"].startswith("switchyard-41-"), "the same call, the same key"
    assert [record["pid"] for record in recorded] == [first["pid"], again["pid"]]
    alone = backend.complete(request()).output
    assert (alone["dispatch"], alone["key"]) == (None, None), "outside a node run: neither"
