"""A real OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

    from tests.agents.backends.chat_server import ChatServer, chat_server  # the fixture

    def test_something(chat_server):
        chat_server.reply('{"verdict": "accept"}', usage={"prompt_tokens": 12, "completion_tokens": 5})
        chat_server.fail(429, times=2, retry_after=0)   # the next two requests answer 429
        chat_server.fail(500)                           # then one 500
        chat_server.delay(2.0)                          # then one reply held back 2 s
        chat_server.malformed()                         # then one body that is not JSON
        ... point a backend at chat_server.base_url ("http://127.0.0.1:<port>/v1") ...
        chat_server.requests[0].body["messages"], chat_server.requests[0].headers["Authorization"]

Scripted answers are used in the order given, one per request; after them every request
gets the standing reply (`reply(...)`, or `respond_with(fn)` to compute it from the
request body). Only POST /v1/chat/completions (and /chat/completions) is spoken; other
paths get a 404 in OpenAI's error shape. Every request is recorded, whatever it got.
"""
from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import pytest

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    raw: bytes
    body: Any = None  # the parsed JSON body, or None when it was not JSON
    answered: int = 0  # the status it got

    def header(self, name: str, default: str | None = None) -> str | None:
        """A request header, whatever its case."""
        wanted = name.lower()
        return next((value for key, value in self.headers.items() if key.lower() == wanted), default)


@dataclass
class _Scripted:
    kind: str  # "status" | "delay" | "malformed" | "reply"
    status: int = 200
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    content: Any = None
    usage: dict | None = None


class ChatServer:
    def __init__(self, host: str = "127.0.0.1"):
        self.host = host
        self.requests: list[RecordedRequest] = []
        self.content: Any = '{"ok": true}'  # str, or a dict/list sent as its JSON text
        self.usage: dict | None = None
        self.model: str | None = None  # the model named in replies; None: the one asked for
        self.responder: Callable[[dict], Any] | None = None
        self._script: deque[_Scripted] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ telling it what to do

    def reply(self, content: Any = None, *, usage: dict | None = None, model: str | None = None) -> "ChatServer":
        """The standing reply: `content` as the assistant message (a dict or list is sent as JSON text)."""
        if content is not None:
            self.content = content
        self.usage = usage
        self.model = model
        return self

    def respond_with(self, responder: Callable[[dict], Any]) -> "ChatServer":
        """Compute the standing reply's content from the request body."""
        self.responder = responder
        return self

    def reply_once(self, content: Any, *, usage: dict | None = None) -> "ChatServer":
        self._add(_Scripted("reply", content=content, usage=usage))
        return self

    def fail(self, status: int, *, times: int = 1, retry_after: float | str | None = None,
             message: str | None = None) -> "ChatServer":
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
        for _ in range(times):
            self._add(_Scripted("status", status=status, headers=headers,
                                message=message or f"scripted failure {status}"))
        return self

    def delay(self, seconds: float, *, times: int = 1) -> "ChatServer":
        """Hold the next reply(s) back `seconds` (then answer normally, if anyone still listens)."""
        for _ in range(times):
            self._add(_Scripted("delay", seconds=seconds))
        return self

    def malformed(self, *, times: int = 1) -> "ChatServer":
        """Answer 200 with a body that is not JSON."""
        for _ in range(times):
            self._add(_Scripted("malformed"))
        return self

    def _add(self, item: _Scripted) -> None:
        with self._lock:
            self._script.append(item)

    def _next(self) -> _Scripted | None:
        with self._lock:
            return self._script.popleft() if self._script else None

    # ------------------------------------------------------------------ running

    @property
    def port(self) -> int:
        assert self._server is not None, "the server is not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def start(self) -> "ChatServer":
        self._server = ThreadingHTTPServer((self.host, 0), _handler_for(self))  # port 0: a free one
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="chat-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers held back by delay()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "ChatServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------ answering

    def completion(self, body: dict, content: Any, usage: dict | None) -> dict:
        if self.responder is not None and content is None:
            content = self.responder(body)
        if content is None:
            content = self.content
        if not isinstance(content, str):
            content = json.dumps(content)
        reply = {
            "id": f"chatcmpl-test-{next(self._ids)}",
            "object": "chat.completion",
            "created": 0,
            "model": self.model or (body.get("model") if isinstance(body, dict) else None) or "test-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        }
        if usage is not None:
            reply["usage"] = {**usage, "total_tokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)}
        return reply


def _handler_for(server: ChatServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet
            pass

        def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None,
                  content_type: str = "application/json") -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)
            except OSError:  # the client gave up (a timeout test)
                pass

        def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
            body = {"error": {"message": message, "type": "invalid_request_error" if status < 500 else "server_error",
                              "code": status}}
            self._send(status, json.dumps(body).encode(), headers)

        def do_GET(self) -> None:
            self._record(b"")
            self._error(404, f"no route for GET {self.path}")
            server.requests[-1].answered = 404

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            record = self._record(raw)
            if self.path.split("?")[0] not in CHAT_PATHS:
                record.answered = 404
                self._error(404, f"no route for POST {self.path}")
                return
            if not isinstance(record.body, dict):
                record.answered = 400
                self._error(400, "the body is not a JSON object")
                return
            scripted = server._next()
            content, usage = None, server.usage
            if scripted is not None:
                if scripted.kind == "status":
                    record.answered = scripted.status
                    self._error(scripted.status, scripted.message, scripted.headers)
                    return
                if scripted.kind == "malformed":
                    record.answered = 200
                    self._send(200, b'{"choices": [ this is not json', content_type="application/json")
                    return
                if scripted.kind == "delay":
                    if server._stopping.wait(scripted.seconds):
                        return
                if scripted.kind == "reply":
                    content, usage = scripted.content, scripted.usage
            record.answered = 200
            self._send(200, json.dumps(server.completion(record.body, content, usage)).encode())

        def _record(self, raw: bytes) -> RecordedRequest:
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            record = RecordedRequest(self.command, self.path, dict(self.headers.items()), raw, body)
            with server._lock:
                server.requests.append(record)
            return record

    return Handler


@pytest.fixture
def chat_server():
    """A started ChatServer, stopped after the test."""
    with ChatServer() as server:
        yield server
