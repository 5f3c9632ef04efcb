"""The `[tools.NAME]` tables of the backends file: each rule refuses what breaks it, naming the
file, the key and what is wrong, and never repeating a secret."""
import json
import sys

import pytest

from agents.backends.config import BackendsFileError, read_backends_file

SECRET = "tok-SECRET-0123456789"
STDIO = '[tools.files]\ntransport = "stdio"\nargv = ["mcp-files"]\nallow = ["read"]\n'
HTTP = '[tools.issues]\ntransport = "http"\nurl = "https://mcp.example.com/mcp"\nallow = ["search"]\n'


def read(tmp_path, text: str) -> dict:
    path = tmp_path / "backends.toml"
    path.write_text(text)
    (tmp_path / "workspace" / "servers").mkdir(parents=True, exist_ok=True)
    return read_backends_file(path, workspace_root=tmp_path / "workspace")


def refused(tmp_path, text: str) -> str:
    with pytest.raises(BackendsFileError) as caught:
        read(tmp_path, text)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'backends.toml'}: ") and SECRET not in message
    return message


def test_it_reads_each_transport_with_its_defaults_and_the_cwd_inside_the_workspace(tmp_path):
    loaded = read(tmp_path, STDIO + 'env = ["FILES_TOKEN"]\ncwd = "servers"\ntimeout_seconds = 5\n'
                  + HTTP + 'headers = { Authorization = "ISSUES_AUTH" }\nmax_result_bytes = 10000000\n')
    assert loaded["tools"] == {
        "files": {"transport": "stdio", "argv": ["mcp-files"], "env": ["FILES_TOKEN"],
                  "cwd": str((tmp_path / "workspace" / "servers").resolve()), "allow": ["read"],
                  "timeout_seconds": 5.0, "max_result_bytes": 100_000},
        "issues": {"transport": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "ISSUES_AUTH"},
                   "allow": ["search"], "timeout_seconds": 30.0, "max_result_bytes": 10_000_000},
    }
    assert read(tmp_path, "")["tools"] == {}


@pytest.mark.parametrize("text, problem", [
    (STDIO.replace("files", "builtin"), "tools.builtin: the name 'builtin' is the product's own tools"),
    (STDIO.replace("tools.files", 'tools."my.files"'), "tools.my.files.[key]: String should match pattern"),  # server.tool
    ('[tools.files]\ntransport = "sse"\nallow = ["read"]\n', "tools.files.transport: Input should be 'stdio' or 'http'"),
    ('[tools.files]\ntransport = "stdio"\nallow = ["read"]\n', "tools.files.argv: required for a stdio server"),
    ('[tools.issues]\ntransport = "http"\nallow = ["read"]\n', "tools.issues.url: required for a http server"),
    (STDIO + 'url = "https://x.example.com/mcp"\n', "tools.files: url do not apply to a stdio server"),
    (HTTP + 'argv = ["x"]\nenv = ["A"]\n', "tools.issues: argv, env do not apply to a http server"),
    (STDIO + f'env = ["TOKEN={SECRET}"]\n', "tools.files.env.0: must be the name of an environment variable"),
    (STDIO + 'cwd = "../elsewhere"\n', "tools.files.cwd: leaves the workspace"),
    (STDIO + 'cwd = "/etc"\n', "tools.files.cwd: must be a path relative to the workspace"),
    (STDIO + f'token = "{SECRET}"\n', "tools.files.token: a secret is never written here: name the environment variable"),
    (HTTP + f'api_key = "{SECRET}"\n', "tools.issues.api_key: a secret is never written here"),
    (HTTP + 'retries = 3\n', "tools.issues.retries: Extra inputs are not permitted"),
    (HTTP.replace("mcp.example.com/mcp", f"u:{SECRET}@mcp.example.com/mcp"),
     "tools.issues.url: must be an http:// or https:// URL without user or password"),
    (HTTP.replace("/mcp\"", f"/mcp?key={SECRET}\""), "tools.issues.url: must have no query string"),
    (HTTP.replace("https://", "ftp://"), "tools.issues.url: must be an http:// or https:// URL with a host"),
    (HTTP + f'headers = {{ Authorization = "Bearer {SECRET}" }}\n',
     "tools.issues.headers.Authorization: must be the name of an environment variable"),
    (HTTP + 'headers = { "Bad Header" = "X" }\n', "tools.issues.headers: a header's name is letters, digits"),
    (STDIO.replace('allow = ["read"]', "allow = []"), "tools.files.allow: List should have at least 1 item"),
    (STDIO.replace('allow = ["read"]\n', ""), "tools.files.allow: Field required"),
    (STDIO.replace('allow = ["read"]', 'allow = ["*"]'), "tools.files.allow.0: String should match pattern"),
    (STDIO.replace('allow = ["read"]', 'allow = ["read", "read"]'), "tools.files.allow: names read more than once"),
    (STDIO + "timeout_seconds = 601\n", "tools.files.timeout_seconds: Input should be less than or equal to 600"),
    (STDIO + "timeout_seconds = 0\n", "tools.files.timeout_seconds: Input should be greater than 0"),
    (STDIO + "max_result_bytes = 10000001\n", "tools.files.max_result_bytes: Input should be less than or equal to"),
])
def test_it_refuses_each_broken_rule_naming_the_key(tmp_path, text, problem):
    assert problem in refused(tmp_path, text)


def test_it_refuses_a_cwd_that_leaves_the_workspace_through_a_link(tmp_path):
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "out").symlink_to(tmp_path)
    assert "tools.files.cwd: leaves the workspace" in refused(tmp_path, STDIO + 'cwd = "out"\n')


def test_the_settings_take_the_servers_from_the_file_and_refuse_a_bad_one_at_start(tmp_path):
    from tests.agents.backends.test_config import start

    path = tmp_path / "backends.toml"
    path.write_text('[tools.files]\ntransport = "stdio"\nargv = ["/nonexistent/mcp-files"]\nallow = ["read"]\n')
    listed = start([sys.executable, "manage.py", "tools"], tmp_path, SWITCHYARD_BACKENDS_FILE=str(path))
    entries = {entry["name"]: entry for entry in json.loads(listed.stdout)}
    assert entries["files.read"]["reachable"] is False
    assert "cannot start /nonexistent/mcp-files" in entries["files.read"]["problem"]
    path.write_text('[tools.files]\ntransport = "stdio"\nargv = ["x"]\ncwd = "../.."\nallow = ["read"]\n')
    refused_start = start([sys.executable, "manage.py", "check"], tmp_path, SWITCHYARD_BACKENDS_FILE=str(path))
    assert refused_start.returncode != 0  # the workspace is the settings' WORKSPACE_ROOT, under the data directory
    assert f"SWITCHYARD_BACKENDS_FILE {path}: tools.files.cwd: leaves the workspace" in refused_start.stderr
