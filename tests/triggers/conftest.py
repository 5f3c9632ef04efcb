"""What the triggers' tests share: a one-node workflow on the builtin backend, a webhook's
signed request, and a loopback HTTP server that callbacks are sent to."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.test import Client

from core.documents import import_documents
from demo.documents import AGENTS
from tests.executions.conftest import workers  # noqa: F401 - real worker processes on the test database
from tests.replay import replayed
from triggers import signing

HOOKED = {
    "workflow_id": "hooked",
    "name": "Started from outside",
    "topology": "seq",
    "nodes": [{"id": "analyse", "agent_ref": "Code_Analyzer", "input_mapping": {"repository": "$.input.repository"}}],
    "transitions": [],
    "input_schema": {"type": "object", "required": ["repository"],
                     "properties": {"repository": {"type": "string", "minLength": 1}}},
}
OTHER = {**HOOKED, "workflow_id": "other", "name": "Another workflow"}


def load_hooked() -> None:
    """The demo's agents and two one-node workflows, `hooked` and `other`."""
    replayed("demo agents and the hooked workflows", lambda: import_documents([*AGENTS, HOOKED, OTHER]))


@pytest.fixture
def hooked(db, tmp_path, settings):
    settings.WORKSPACE_ROOT = tmp_path
    load_hooked()


def signed_post(path: str, body, secret: str, *, timestamp: str | None = None, headers: dict | None = None,
                raw: bytes | None = None):
    """POST `body` (JSON, or `raw` bytes) to a webhook's `path`, signed with `secret` now."""
    payload = raw if raw is not None else json.dumps(body).encode()
    timestamp = timestamp or str(int(time.time()))
    extra = {"HTTP_X_SWITCHYARD_TIMESTAMP": timestamp,
             "HTTP_X_SWITCHYARD_SIGNATURE": signing.signature(secret, timestamp, payload)}
    extra.update(headers or {})
    return Client().generic("POST", path, payload, content_type="application/json", **extra)


class CallbackServer:
    """A loopback HTTP server of the test's own: it answers each POST with the next status of
    `answers` (then 200) and keeps every request's headers and body."""

    def __init__(self):
        self.received: list[dict] = []
        self.answers: list[tuple[int, dict]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - the name http.server calls
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.received.append({"path": self.path, "headers": dict(self.headers), "body": body})
                status, headers = server.answers.pop(0) if server.answers else (200, {})
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"127.0.0.1:{self.httpd.server_address[1]}"
        self.url = f"http://{self.host}/done"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def callback_server(settings):
    """A loopback server whose host is the one CALLBACK_ALLOWED_HOSTS lists."""
    server = CallbackServer()
    settings.CALLBACK_ALLOWED_HOSTS = [server.host]
    yield server
    server.stop()
