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

A request with `"stream": true` is answered with server-sent events, as OpenAI does: a
comment, a first chunk with the role, the content in a few deltas, a chunk with the
finish reason, then `data: [DONE]`, in chunked transfer encoding. Its usage goes where
`usage_in` says:

        chat_server.reply("Fine.", usage={...}, usage_in="final")  # one last chunk, no choices
                                                                   # (only when stream_options.include_usage)
        chat_server.reply("Fine.", usage={...}, usage_in="every")  # cumulative in every chunk (vLLM)
        chat_server.reply("Fine.", usage={...}, usage_in="none")   # nowhere
        chat_server.break_stream(after=2)          # the next stream stops after 2 events, no [DONE]
        chat_server.break_stream(after=2, stall=3) # … and holds the connection 3 s first
        chat_server.stream_event("{not json")      # the next stream carries this event after its first
        chat_server.ignore_stream()                # the next streamed request gets a plain JSON reply
        chat_server.requests[0].events             # the chunks it sent (dicts; other events as text)
"""
from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")


class ToolCalls(list):
    """A reply that asks for tool calls instead of answering: each (function name, arguments),
    the arguments a dict (sent as its JSON text) or the text to send as it is.

        chat_server.reply_once(ToolCalls([("builtin__knowledge_search", {"query": "budget"})]))
        chat_server.respond_with(lambda body: ToolCalls([("demo__echo", "{not json")]))
    """

    def message(self, ids) -> dict:
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{next(ids)}", "type": "function",
             "function": {"name": name, "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)}}
            for name, arguments in self]}


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    raw: bytes
    body: Any = None  # the parsed JSON body, or None when it was not JSON
    answered: int = 0  # the status it got
    events: list[Any] = field(default_factory=list)  # a streamed answer's events: chunks (dicts), else text

    def header(self, name: str, default: str | None = None) -> str | None:
        """A request header, whatever its case."""
        wanted = name.lower()
        return next((value for key, value in self.headers.items() if key.lower() == wanted), default)


@dataclass
class _Scripted:
    kind: str  # "status" | "delay" | "malformed" | "reply" | "break_stream" | "stream_event" | "ignore_stream"
    status: int = 200
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    content: Any = None
    usage: dict | None = None
    usage_in: str | None = None
    after: int = 0


class ChatServer:
    def __init__(self, host: str = "127.0.0.1"):
        self.host = host
        self.requests: list[RecordedRequest] = []
        self.content: Any = '{"ok": true}'  # str, or a dict/list sent as its JSON text
        self.usage: dict | None = None
        self.usage_in = "final"  # where a stream carries the usage: final | every | none
        self.model: str | None = None  # the model named in replies; None: the one asked for
        self.responder: Callable[[dict], Any] | None = None
        self._script: deque[_Scripted] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ telling it what to do

    def reply(self, content: Any = None, *, usage: dict | None = None, model: str | None = None,
              usage_in: str = "final") -> ChatServer:
        """The standing reply: `content` as the assistant message (a dict or list is sent as JSON text)."""
        if content is not None:
            self.content = content
        self.usage = usage
        self.model = model
        self.usage_in = _usage_in(usage_in)
        return self

    def respond_with(self, responder: Callable[[dict], Any]) -> ChatServer:
        """Compute the standing reply's content from the request body."""
        self.responder = responder
        return self

    def reply_once(self, content: Any, *, usage: dict | None = None, usage_in: str | None = None) -> ChatServer:
        self._add(_Scripted("reply", content=content, usage=usage,
                            usage_in=None if usage_in is None else _usage_in(usage_in)))
        return self

    def fail(self, status: int, *, times: int = 1, retry_after: float | str | None = None,
             message: str | None = None) -> ChatServer:
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
        for _ in range(times):
            self._add(_Scripted("status", status=status, headers=headers,
                                message=message or f"scripted failure {status}"))
        return self

    def delay(self, seconds: float, *, times: int = 1) -> ChatServer:
        """Hold the next reply(s) back `seconds` (then answer normally, if anyone still listens)."""
        for _ in range(times):
            self._add(_Scripted("delay", seconds=seconds))
        return self

    def malformed(self, *, times: int = 1) -> ChatServer:
        """Answer 200 with a body that is not JSON."""
        for _ in range(times):
            self._add(_Scripted("malformed"))
        return self

    def break_stream(self, *, after: int = 2, stall: float = 0.0, times: int = 1) -> ChatServer:
        """Stream the next reply(s) but close the connection after `after` events, without
        [DONE] (holding it `stall` seconds first)."""
        for _ in range(times):
            self._add(_Scripted("break_stream", after=after, seconds=stall))
        return self

    def stream_event(self, text: str, *, times: int = 1) -> ChatServer:
        """Stream the next reply(s) with `text` as an event (`data: {text}`) after the first."""
        for _ in range(times):
            self._add(_Scripted("stream_event", message=text))
        return self

    def ignore_stream(self, *, times: int = 1) -> ChatServer:
        """Answer the next request(s) with a plain JSON completion even when a stream is asked for."""
        for _ in range(times):
            self._add(_Scripted("ignore_stream"))
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

    def start(self) -> ChatServer:
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

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------ answering

    def _content(self, body: dict, content: Any) -> str | ToolCalls:
        if self.responder is not None and content is None:
            content = self.responder(body)
        if content is None:
            content = self.content
        return content if isinstance(content, (str, ToolCalls)) else json.dumps(content)

    def _model(self, body: dict) -> str:
        return self.model or (body.get("model") if isinstance(body, dict) else None) or "test-model"

    def completion(self, body: dict, content: Any, usage: dict | None) -> dict:
        content = self._content(body, content)
        calls = isinstance(content, ToolCalls)
        reply = {
            "id": f"chatcmpl-test-{next(self._ids)}",
            "object": "chat.completion",
            "created": 0,
            "model": self._model(body),
            "choices": [{"index": 0, "message": content.message(self._ids) if calls
                         else {"role": "assistant", "content": content},
                         "finish_reason": "tool_calls" if calls else "stop"}],
        }
        if usage is not None:
            reply["usage"] = _with_total(usage)
        return reply

    def chunks(self, body: dict, content: Any, usage: dict | None, usage_in: str) -> list[dict]:
        """A streamed completion's chunks: the role, the content in up to three deltas, the
        finish reason, and the usage where `usage_in` puts it."""
        content = self._content(body, content)
        template = {"id": f"chatcmpl-test-{next(self._ids)}", "object": "chat.completion.chunk", "created": 0,
                    "model": self._model(body)}
        if isinstance(content, ToolCalls):  # each call: its id and name, then its arguments in two pieces
            deltas: list[dict] = [{"role": "assistant", "content": None}]
            for index, call in enumerate(content.message(self._ids)["tool_calls"]):
                arguments = call["function"]["arguments"]
                half = len(arguments) // 2
                deltas += [{"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                            "function": {"name": call["function"]["name"], "arguments": ""}}]},
                           {"tool_calls": [{"index": index, "function": {"arguments": arguments[:half]}}]},
                           {"tool_calls": [{"index": index, "function": {"arguments": arguments[half:]}}]}]
            deltas.append({})
            finish, content = "tool_calls", ""
        else:
            size = max(1, -(-len(content) // 3))
            pieces = [content[start:start + size] for start in range(0, len(content), size)] or [""]
            deltas = [{"role": "assistant", "content": ""}] + [{"content": piece} for piece in pieces] + [{}]
            finish = "stop"
        chunks = [{**template, "choices": [{"index": 0, "delta": delta,
                                            "finish_reason": finish if index == len(deltas) - 1 else None}]}
                  for index, delta in enumerate(deltas)]
        asked = isinstance(body.get("stream_options"), dict) and body["stream_options"].get("include_usage") is True
        if usage is not None and usage_in == "every":  # cumulative: what was generated so far
            written = 0
            for index, chunk in enumerate(chunks):
                written += len(deltas[index].get("content") or "")
                done = usage.get("completion_tokens", 0) * written // max(1, len(content))
                if index == len(chunks) - 1:
                    done = usage.get("completion_tokens", 0)  # the last is the real total
                chunk["usage"] = _with_total({**usage, "completion_tokens": done})
        elif usage is not None and usage_in == "final" and asked:
            for chunk in chunks:
                chunk["usage"] = None
            chunks.append({**template, "choices": [], "usage": _with_total(usage)})
        return chunks


def _usage_in(value: str) -> str:
    if value not in ("final", "every", "none"):
        raise ValueError(f"usage_in is final, every or none, not {value!r}")
    return value


def _with_total(usage: dict) -> dict:
    return {**usage, "total_tokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)}


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
            content, usage, usage_in = None, server.usage, server.usage_in
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
                    usage_in = scripted.usage_in or usage_in
            record.answered = 200
            if record.body.get("stream") is True and (scripted is None or scripted.kind != "ignore_stream"):
                events: list[Any] = server.chunks(record.body, content, usage, usage_in)
                if scripted is not None and scripted.kind == "stream_event":
                    events.insert(1, scripted.message)
                if scripted is not None and scripted.kind == "break_stream":
                    self._stream(record, events[:scripted.after], done=False, stall=scripted.seconds)
                else:
                    self._stream(record, events)
                return
            self._send(200, json.dumps(server.completion(record.body, content, usage)).encode())

        def _stream(self, record: RecordedRequest, events: list[Any], *, done: bool = True, stall: float = 0) -> None:
            """Send `events` as server-sent events, each in its own HTTP chunk, then [DONE]; or,
            when not `done`, hold on `stall` seconds and close the connection mid-stream."""
            def chunk(data: bytes) -> bytes:
                return f"{len(data):x}\r\n".encode() + data + b"\r\n"

            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream; charset=utf-8")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.write(chunk(b": keep-alive\n\n"))
                for event in events:
                    text = event if isinstance(event, str) else json.dumps(event, ensure_ascii=False)
                    self.wfile.write(chunk(f"data: {text}\n\n".encode()))
                    self.wfile.flush()
                    record.events.append(event)
                if done:
                    self.wfile.write(chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
                    self.wfile.flush()
                    return
                server._stopping.wait(stall)
                self.close_connection = True  # no last chunk: the stream breaks off
            except OSError:  # the client gave up (a timeout test)
                self.close_connection = True

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


def backend_request(**fields):
    """A BackendRequest for the backends under test (a reviewer's), with `fields` changed."""
    from agents.backends import BackendRequest

    values = dict(agent_id="Reviewer", skills=["review"], required_skills=["review"], system_prompt="You review drafts.",
                  prompt="## draft\nRelease notes for 1.2", model="", max_output_tokens=500)
    values.update(fields)
    return BackendRequest(**values)
