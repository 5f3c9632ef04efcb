"""The operators' backends file is checked whole when a process starts: each mistake is
named by the file, the key and what is wrong, and a URL's secrets are never repeated."""
import os
import subprocess
import sys

import pytest

from agents.backends.config import BackendsFileError, read_backends_file
from engine.tokens import OFFLINE_ENCODINGS
from tests.executions.conftest import ROOT

SECRET = "sk-SECRET-0123456789"
NO_URL = "must be an http:// or https:// URL with a host"
GOOD = "https://api.example.com/v1"
PRICE = "a price is a number of dollars per million tokens"


def backend(base_url: str) -> str:
    return f'[backends.openai]\nkind = "openai_compatible"\nbase_url = "{base_url}"\n'


def model(**fields: str) -> str:
    return "[models.m]\n" + "".join(f"{key} = {value}\n" for key, value in fields.items())


def write(tmp_path, text: str | bytes):
    path = tmp_path / "backends.toml"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def refused(path) -> str:
    with pytest.raises(BackendsFileError) as caught:
        read_backends_file(path)
    return str(caught.value)


@pytest.mark.parametrize("text, problem", [
    (backend(f"api.example.com/v1?key={SECRET}"), f"backends.openai.base_url: {NO_URL}"),
    (backend("ftp://x"), f"backends.openai.base_url: {NO_URL}"),
    (backend("http:///v1"), f"backends.openai.base_url: {NO_URL}"),
    (backend(f"user:{SECRET}@api.example.com"), f"backends.openai.base_url: {NO_URL}"),
    (backend(f"https://user:{SECRET}@api.example.com/v1"),
     "backends.openai.base_url: must be an http:// or https:// URL without user or password"),
    (backend(f"https://{SECRET}@api.example.com/v1"),
     "backends.openai.base_url: must be an http:// or https:// URL without user or password"),
    (backend(f"https://api.example.com/v1?key={SECRET}"), "backends.openai.base_url: must have no query string (?…)"),
    (backend("https://api.example.com/v1?"), "backends.openai.base_url: must have no query string (?…)"),
    (backend(f"https://api.example.com/v1#{SECRET}"), "backends.openai.base_url: must have no fragment (#…)"),
    (backend("https://api.example.com:99999/v1"), "backends.openai.base_url: has a port that is not a number"),
    (backend("https://api.example.com /v1"), "backends.openai.base_url: must be an http:// or https:// URL without"),
    (backend(GOOD) + f'api_key_env = "{SECRET}"',
     "backends.openai.api_key_env: must be the name of an environment variable"),
    ('[backends.cli]\nkind = "command"\nargv = ["llm"]\n' + f'env = ["KEY={SECRET}"]',
     "backends.cli.env.0: must be the name of an environment variable"),
    (backend(GOOD) + "timeout_seconds = nan", "backends.openai.timeout_seconds: Input should be a finite number"),
    (backend(GOOD) + "max_retries = true", "backends.openai.max_retries: Input should be a valid integer"),
    (model(encoding='"p50k_whatever"'),
     "models.m.encoding: 'p50k_whatever' is not an encoding tokens can be counted in (available: "),
    (model(input_price='"1e100000"'), f"models.m.input_price: {PRICE}, from 0 to 10000"),
    (model(output_price='"Infinity"'), f"models.m.output_price: {PRICE}, from 0 to 10000"),
    (model(cached_input_price='"NaN"'), f"models.m.cached_input_price: {PRICE}"),
    (model(context_window=str(10**23)), "models.m.context_window: Input should be less than or equal to 100000000"),
    (model(context_window="1.5e5"), "models.m.context_window: Input should be a valid integer"),
    (model(max_output="0"), "models.m.max_output: Input should be greater than 0"),
    (model(context_window="8000", max_output="16000"), "models.m.max_output: larger than its context_window (8000)"),
])
def test_it_refuses_each_bad_entry_naming_the_file_the_key_and_the_problem(tmp_path, text, problem):
    path = write(tmp_path, text)
    message = refused(path)
    assert message.startswith(f"{path}: ") and problem in message
    assert SECRET not in message


def test_it_names_every_problem_of_a_file_at_once(tmp_path):
    message = refused(write(tmp_path, backend(f"https://u:{SECRET}@h/v1") + model(input_price='"1e100000"',
                                                                                   encoding='"nope"')))
    assert message.count("; ") == 2 and "backends.openai.base_url" in message and "models.m.input_price" in message
    assert SECRET not in message


def test_it_refuses_a_file_that_is_not_utf8_text_naming_its_line(tmp_path):
    message = refused(write(tmp_path, b'[backends.openai]\nkind = "openai_\xff"\n'))
    assert message == f"{tmp_path / 'backends.toml'}: line 2: not UTF-8 text (byte 34 of the file)"


def test_it_refuses_a_file_nested_too_deeply_without_a_traceback(tmp_path):
    path = write(tmp_path, "x = " + "[" * 5000 + "]" * 5000 + "\n")
    assert refused(path) == f"{path}: nested too deeply to be read (arrays or tables within one another)"


def test_it_takes_the_encodings_the_counter_counts_and_values_up_to_the_bounds(tmp_path):
    for encoding in OFFLINE_ENCODINGS:
        text = (backend("http://[::1]:8000/v1") + 'api_key_env = "LOCAL_KEY"\n'
                + model(encoding=f'"{encoding}"', context_window="100000000", max_output="100000000",
                        input_price='"10000"', output_price='"0"', cached_input_price="3"))
        loaded = read_backends_file(write(tmp_path, text))
        assert loaded["backends"]["openai"]["base_url"] == "http://[::1]:8000/v1"
        assert loaded["models"]["m"]["encoding"] == encoding and loaded["models"]["m"]["context_window"] == 10**8


def start(command: list[str], tmp_path, **env: str) -> subprocess.CompletedProcess:
    bin_dir = os.path.dirname(sys.executable)
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin", "SWITCHYARD_DATA_DIR": str(tmp_path),
                               "REDIS_URL": "redis://127.0.0.1:6379/15", **env})


@pytest.mark.parametrize("command", [
    [sys.executable, "manage.py", "check"],
    ["gunicorn", "project.wsgi", "--bind", "127.0.0.1:0", "--workers", "1"],
    ["celery", "-A", "project", "worker", "--pool", "solo", "--queues", "never-started"],
    ["celery", "-A", "project", "beat", "--schedule", "{tmp}/celerybeat-schedule"],
], ids=["check", "web", "worker", "beat"])
def test_every_process_refuses_to_start_on_a_bad_file(tmp_path, command):
    path = write(tmp_path, backend(f"https://user:{SECRET}@api.example.com/v1"))
    started = start([part.replace("{tmp}", str(tmp_path)) for part in command], tmp_path,
                    SWITCHYARD_BACKENDS_FILE=str(path))
    assert started.returncode != 0
    assert (f"SWITCHYARD_BACKENDS_FILE {path}: backends.openai.base_url: must be an http:// or https:// URL "
            "without user or password") in started.stderr
    assert SECRET not in started.stdout + started.stderr


def test_openai_base_url_in_the_environment_is_checked_as_the_files_are(tmp_path):
    started = start([sys.executable, "manage.py", "check"], tmp_path,
                    OPENAI_BASE_URL=f"https://api.example.com/v1?key={SECRET}")
    assert started.returncode != 0 and "OPENAI_BASE_URL must have no query string" in started.stderr
    assert SECRET not in started.stdout + started.stderr
