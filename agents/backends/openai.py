"""The `openai_compatible` backend: any server that speaks POST /chat/completions.

Options (settings only, never workflow documents):

- `base_url` — e.g. "https://api.openai.com/v1", "http://127.0.0.1:8000" (then /v1 is
  added) or a provider's own prefix such as ".../openai/v1";
- `api_key_env` — the name of the environment variable holding the key, read at call time;
  no key, no Authorization header (local servers);
- `model` — used when the agent names none;
- `timeout_seconds` — per HTTP request (connect and each read);
- `max_retries` — further attempts after a 429, a 5xx or a broken connection, with
  exponential backoff that honours Retry-After, each wait capped at `max_backoff_seconds`;
- `stream` — ask for the reply as server-sent events (`"stream": true`, with
  `stream_options.include_usage`) and join its deltas.

A timeout is not retried here (each try would cost the whole timeout again): it is a
retryable TIMEOUT for the run to retry. Other 4xx are not retryable (but see 409 below).

For a node run, each call carries an `Idempotency-Key` (the same for the same call in every
dispatch of the node run, and in every try of it here; see dispatch.py) and
`X-Switchyard-Dispatch` (which time the node run was sent to a worker): a provider that
honours the key answers a call made again after a fault as it answered the first, without
charging it twice. A 409 to a call with a key is what such a provider answers while the
first is still being processed (draft-ietf-httpapi-idempotency-key-header), so it is tried
again like a 429.

A streamed reply is whole only when the stream ends with `data: [DONE]`: one that breaks
off before it is a retryable BAD_RESPONSE (not retried here: the server may have billed
it), never a shorter reply. Its usage is the last `usage` a chunk carried: servers send it
once, in a final chunk with no choices (OpenAI), or cumulatively in every chunk (vLLM's
continuous usage stats), so chunks' usages are never added up.

A node run cancelled while its call waits for the answer or reads it (core/cancellation.py)
has the call's socket shut from the worker's heartbeat thread: the call stops there, raises
Cancelled and is not tried again.
"""
from __future__ import annotations

import email.utils
import http.client
import json
import os
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from core.backend_urls import base_url_problem, shown_url
from core.cancellation import check_cancelled, stoppable
from engine.errors import EngineError

from .base import Backend, BackendError, BackendRequest, BackendResponse
from .builtin import count_tokens
from .dispatch import dispatch_number, idempotency_key
from .metering import Call, check_call, counting_encoding, record_call

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n(.*?)\n?```", re.S)


def parse_reply(content: str) -> Any:
    """A model's reply as output: the JSON object or array it is (also inside a ```json
    fence, the first one), else {"text": content}."""
    candidates = [content.strip()]
    candidates += [match.group(1).strip() for match in _FENCE.finditer(content)]
    for candidate in candidates:
        if candidate[:1] in ("{", "["):
            try:
                value = json.loads(candidate)
            except ValueError:
                continue
            if isinstance(value, (dict, list)):
                return value
    return {"text": content}


def function_names(tools: list[str]) -> dict[str, str]:
    """A function name for each tool (`server.tool` → `server__tool`): what the API allows,
    letters, digits, _ and -, at most 64; made unique with a number where two would meet."""
    names: dict[str, str] = {}
    for tool in tools:
        base = re.sub(r"[^A-Za-z0-9_-]", "_", tool.replace(".", "__", 1))[:60]
        name, number = base, 1
        while name in names.values():
            number += 1
            name = f"{base}_{number}"
        names[tool] = name
    return names


def transcript_messages(transcript: list[dict], names: dict[str, str]) -> list[dict]:
    """The conversation since the prompt as chat messages: the assistant's turns with their
    `tool_calls`, each call's result as a `tool` message (its JSON text)."""
    messages: list[dict] = []
    for entry in transcript:
        if entry["role"] == "assistant":
            messages.append({"role": "assistant", "content": entry.get("text") or None, "tool_calls": [
                {"id": call["id"], "type": "function",
                 "function": {"name": names.get(call["name"], call["name"]),
                              "arguments": call["arguments"] if isinstance(call["arguments"], str)
                              else json.dumps(call["arguments"], ensure_ascii=False)}}
                for call in entry["tool_calls"]]})
        else:
            content = entry["content"]
            messages.append({"role": "tool", "tool_call_id": entry["id"],
                             "content": content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)})
    return messages


def asked_calls(data: dict, tools: dict[str, str]) -> list[dict]:
    """The calls the reply asks for, each {"id", "name" (the tool's, where the function
    name is one of ours), "arguments" (the JSON object, or the text when it is not one)}."""
    asked = []
    for number, call in enumerate(data["choices"][0]["message"].get("tool_calls") or [], start=1):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        text = function.get("arguments")
        try:
            arguments = json.loads(text) if isinstance(text, str) and text.strip() else {}
        except ValueError:
            arguments = text
        if not isinstance(arguments, dict):
            arguments = text if isinstance(text, str) else json.dumps(text)
        name = str(function.get("name") or "")
        asked.append({"id": str(call.get("id") or f"call_{number}"), "name": tools.get(name, name),
                      "arguments": arguments})
    return asked


def message_text(message: dict) -> str:
    """What a chat message's tokens are counted from: its text and its calls' names and arguments."""
    content = message.get("content")
    parts = [content if isinstance(content, str) else ""]
    for call in message.get("tool_calls") or []:
        function = (call.get("function") if isinstance(call, dict) else None) or {}
        parts += [str(function.get("name", "")), str(function.get("arguments", ""))]
    return "".join(parts)


def summary_text(reply: str) -> str:
    """The summary in a reply: its text, or the `summary`/`text` of a JSON object."""
    value = parse_reply(reply)
    if isinstance(value, dict):
        for key in ("summary", "text"):
            if isinstance(value.get(key), str):
                return value[key].strip()
    return reply.strip()


def summary_instruction(target_tokens: int) -> str:
    return (f"Summarise the following text in about {target_tokens} tokens. Keep its facts, figures and "
            "names; add nothing. Reply with the summary only.")


def chat_completions_url(base_url: str, name: str = "openai") -> str:
    """`{base_url}/chat/completions`; a bare host gets /v1, a URL already ending in
    /chat/completions is used as it is. A base URL the operators' file would refuse (not
    http(s), a user or password, a query) is refused here too, in words that never repeat
    it: its message ends up in node runs' errors, which viewers read."""
    problem = base_url_problem(base_url.strip() if isinstance(base_url, str) else base_url)
    if problem:
        raise BackendError(f"backend {name!r}: base_url {problem}", code="BAD_BACKEND_CONFIG", retryable=False)
    parts = urllib.parse.urlsplit(base_url.strip())
    path = parts.path.rstrip("/")
    if not path:
        path = "/v1"
    if not path.endswith("/chat/completions"):
        path += "/chat/completions"
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as seconds: delta-seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment is None:
        return None
    return max(0.0, moment.timestamp() - time.time())


def _server_message(body: bytes) -> str:
    text = body.decode("utf-8", errors="replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:500] or "(empty body)"
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:500]
        for key in ("error", "message", "detail"):
            if isinstance(data.get(key), str):
                return data[key][:500]
    return text[:500]


def _count(value: Any) -> int | None:
    """A token count as the server wrote it, or None when it is not one."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _usage(usage: Any) -> tuple[int | None, int | None, int]:
    """(prompt tokens, completion tokens, cached prompt tokens) of a `usage` object; the
    first two None when the server did not report them."""
    if not isinstance(usage, dict):
        return None, None, 0
    details = usage.get("prompt_tokens_details")
    if not isinstance(details, dict):
        details = {}
    return _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")), \
        _count(details.get("cached_tokens")) or 0


class StreamBrokeOff(EngineError):
    """The event stream ended before `data: [DONE]`."""

    code = "STREAM_BROKE_OFF"


def sse_data(lines: Iterable[bytes]) -> Iterator[str]:
    """The `data` of each server-sent event in `lines` (bytes, as read), in order, up to and
    including "[DONE]". Comments (`: keep-alive`) and other fields (`event:`, `id:`, `retry:`)
    are skipped; several `data:` lines of one event are joined with newlines. Raises
    StreamBrokeOff when the lines end before "[DONE]"."""
    data: list[str] = []
    for raw in lines:
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if not line:  # the end of an event
            if data:
                event, data = "\n".join(data), []
                yield event
                if event.strip() == "[DONE]":
                    return
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if field == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data and "\n".join(data).strip() == "[DONE]":  # the last blank line was lost: [DONE] is still whole
        yield "[DONE]"
        return
    raise StreamBrokeOff("the event stream ended before data: [DONE]")


class _Sockets:
    """The sockets one call's connections open (`opener`: urllib's, whose HTTP and HTTPS
    connections keep their sockets here), which a cancel shuts from another thread (`shut`):
    closing a connection there would not wake a read blocked on it, a shutdown does (the
    read sees the end of the stream), whether the call waits for the answer or reads it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: list[socket.socket] = []
        self._shut = False

    def keep(self, sock: socket.socket) -> None:
        with self._lock:
            self._kept.append(sock)
            shut = self._shut
        if shut:  # cancelled while it connected
            self._shutdown(sock)

    def shut(self) -> None:
        with self._lock:
            self._shut, kept = True, list(self._kept)
        for sock in kept:
            self._shutdown(sock)

    @staticmethod
    def _shutdown(sock: socket.socket) -> None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:  # closed already: nothing left to stop
            pass

    def connection(self, base: type[http.client.HTTPConnection]) -> type[http.client.HTTPConnection]:
        """`base` (HTTPConnection or HTTPSConnection), keeping each socket it connects here."""
        sockets = self

        class Kept(base):  # type: ignore[valid-type, misc]  # a class made from the one urllib passes
            def connect(self) -> None:
                super().connect()
                sockets.keep(self.sock)

        return Kept

    def opener(self) -> urllib.request.OpenerDirector:
        """urllib's default opener (proxies from the environment, redirects, …) whose HTTP and
        HTTPS connections keep their sockets here."""
        sockets = self

        class HTTP(urllib.request.HTTPHandler):
            def do_open(self, http_class, req, **options):  # type: ignore[override]
                return super().do_open(sockets.connection(http_class), req, **options)

        class HTTPS(urllib.request.HTTPSHandler):
            def do_open(self, http_class, req, **options):  # type: ignore[override]
                return super().do_open(sockets.connection(http_class), req, **options)

        return urllib.request.build_opener(HTTP, HTTPS)


def _is_timeout(error: BaseException) -> bool:
    if isinstance(error, (TimeoutError, socket.timeout)):
        return True
    reason = getattr(error, "reason", None)
    return isinstance(reason, (TimeoutError, socket.timeout))


class OpenAICompatibleBackend(Backend):
    def __init__(self, name: str = "openai", *, base_url: str, api_key_env: str = "", model: str = "",
                 timeout_seconds: float = 60, max_retries: int = 3, max_backoff_seconds: float = 30,
                 backoff_seconds: float = 1.0, stream: bool = False,
                 sleep: Callable[[float], None] = time.sleep):
        self.name = name
        self.url = chat_completions_url(base_url, name)
        self.api_key_env = api_key_env
        self.model = model
        self.timeout_seconds = float(timeout_seconds)
        self.max_retries = max(0, int(max_retries))
        self.max_backoff_seconds = float(max_backoff_seconds)
        self.backoff_seconds = float(backoff_seconds)
        if not isinstance(stream, bool):
            raise TypeError(f"stream must be true or false, not {stream!r}")
        self.stream = stream
        self.sleep = sleep
        self.label = f"{name}: OpenAI-compatible chat completions at {shown_url(self.url)}" + (
            f" (default model {model})" if model else "") + (", streamed" if stream else "")

    # ------------------------------------------------------------------ the Backend API

    def complete(self, request: BackendRequest) -> BackendResponse:
        names = function_names([tool["name"] for tool in request.tools])
        messages = []
        if request.system_prompt:
            messages.append({"role": "system", "content": request.system_prompt})
        messages.append({"role": "user", "content": request.prompt})
        messages += transcript_messages(request.transcript, names)
        tools = [{"type": "function", "function": {"name": names[tool["name"]], "description": tool["description"],
                                                   "parameters": tool["input_schema"]}} for tool in request.tools]
        data, content, call = self.chat(messages, model=request.model, max_tokens=request.max_output_tokens,
                                        encoding=request.encoding, tools=tools,
                                        parallel_tool_calls=request.parallel_tool_calls)
        tool_calls = asked_calls(data, {function: tool for tool, function in names.items()})
        output = None if tool_calls else parse_reply(content or "")
        return BackendResponse(output=output, tokens_in=call.tokens_in, tokens_out=call.tokens_out,
                               backend=self.name, model=call.model, text=content or "", tool_calls=tool_calls)

    def summarize(self, text: str, target_tokens: int, *, model: str = "") -> str:
        messages = [
            {"role": "system", "content": "You summarise texts faithfully and concisely."},
            {"role": "user", "content": f"{summary_instruction(target_tokens)}\n\n{text}"},
        ]
        _, content, _ = self.chat(messages, model=model, max_tokens=max(32, int(target_tokens * 1.5)))
        return summary_text(content or "")

    # ------------------------------------------------------------------ HTTP

    def chat(self, messages: list[dict], *, model: str = "", max_tokens: int | None = None,
             encoding: str = "", tools: list[dict] | None = None,
             parallel_tool_calls: bool = True) -> tuple[dict, str | None, Call]:
        """(the response body, the first choice's content, the call as metered) of one chat
        completion; a streamed one's body is put together as the unstreamed body would be.
        Its tokens are the server's `usage` (in a stream, the last one sent); where it
        reports none, they are counted here, in the model's encoding (`encoding`, the agent's,
        where the catalogue names none), and the call says so."""
        chosen = model or self.model
        if not chosen:
            raise BackendError(f"backend {self.name!r} has no default model and the agent names none",
                               code="BAD_BACKEND_CONFIG", retryable=False)
        body: dict[str, Any] = {"model": chosen, "messages": messages}
        if tools:
            body["tools"] = tools
            if not parallel_tool_calls:  # the API's default is true: say so only when it is not
                body["parallel_tool_calls"] = False
        if max_tokens:
            body["max_tokens"] = max_tokens
        if self.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        encoding = counting_encoding(self.name, chosen, encoding)
        counted_in = sum(count_tokens(message_text(message), encoding) for message in messages)
        check_call(backend=self.name, model=chosen, tokens_in=counted_in, max_tokens=max_tokens)
        try:
            return self._answer(body, chosen, counted_in, encoding)
        except BackendError as error:
            if error.code == "BAD_RESPONSE":  # the server answered, and may have billed the call: its cost is unknown
                record_call(backend=self.name, model=chosen, tokens_in=counted_in, tokens_out=0, usage="unknown",
                            encoding=encoding)
            raise

    def _answer(self, body: dict, chosen: str, counted_in: int, encoding: str) -> tuple[dict, str | None, Call]:
        data = self._post(body)
        try:
            message = data["choices"][0]["message"]
            content = message.get("content")
        except (KeyError, IndexError, TypeError, AttributeError):
            raise BackendError(f"{self.name}: the response has no choices[0].message: {json.dumps(data)[:300]}",
                               code="BAD_RESPONSE", retryable=False) from None
        if isinstance(content, list):  # content parts
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        if not isinstance(content, str) and not (content is None and message.get("tool_calls")):
            raise BackendError(f"{self.name}: the reply has no text content", code="BAD_RESPONSE", retryable=True)
        reported_in, reported_out, cached_in = _usage(data.get("usage"))
        reported = reported_in is not None and reported_out is not None
        if reported_in is not None and reported_out is not None:
            tokens_in, tokens_out = reported_in, reported_out
        else:
            tokens_in, tokens_out = counted_in, count_tokens(message_text(message), encoding)
        call = record_call(backend=self.name, model=str(data.get("model") or chosen), tokens_in=tokens_in,
                           tokens_out=tokens_out, cached_in=cached_in if reported else 0,
                           usage="reported" if reported else "counted", encoding=encoding)
        return data, content, call

    def _headers(self, *, stream: bool = False, payload: bytes = b"") -> dict[str, str]:
        """The request's headers; with a dispatch open, the call's idempotency key and the
        dispatch's number (asked once per call: every try of it sends the same)."""
        headers = {"Content-Type": "application/json",
                   "Accept": "text/event-stream" if stream else "application/json", "User-Agent": "switchyard"}
        key = os.environ.get(self.api_key_env, "") if self.api_key_env else ""
        if key:
            headers["Authorization"] = f"Bearer {key}"
        call_key = idempotency_key(payload)
        if call_key:
            headers.update({"Idempotency-Key": call_key, "X-Switchyard-Dispatch": str(dispatch_number())})
        return headers

    def _post(self, body: dict) -> dict:
        """The response body to `body`: read whole, or put together from the event stream
        when one was asked for (a server that answers with JSON instead is read whole)."""
        payload = json.dumps(body, ensure_ascii=False).encode()
        where = shown_url(self.url)
        stream = bool(body.get("stream"))
        last: BackendError | None = None
        hint: float | None = None  # the last Retry-After, in seconds
        headers = self._headers(stream=stream, payload=payload)
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.sleep(self._delay(attempt, hint))
                check_cancelled()  # a node run cancelled meanwhile tries no more
            request = urllib.request.Request(self.url, data=payload, headers=headers, method="POST")
            sockets = _Sockets()
            try:
                # A cancel of the node run shuts the call's socket (see _Sockets): waiting for the
                # answer, or reading it (a stream, a body), the call stops there and raises
                # Cancelled, before any of the handlers below could take it for a fault.
                with stoppable(sockets.shut), sockets.opener().open(request, timeout=self.timeout_seconds) as response:
                    if stream and response.headers.get_content_type() != "application/json":
                        return self._read_stream(response, where)
                    raw = response.read()
            except urllib.error.HTTPError as error:
                status = error.code
                try:
                    raw = error.read()
                except (OSError, http.client.HTTPException):
                    raw = b""
                message = f"{where} answered HTTP {status}: {_server_message(raw)}"
                if status == 429 or status >= 500 or (status == 409 and "Idempotency-Key" in headers):
                    last = BackendError(message, code=f"HTTP_{status}", retryable=True)
                    hint = retry_after_seconds(error.headers.get("Retry-After") if error.headers else None)
                    continue
                raise BackendError(message, code=f"HTTP_{status}", retryable=False) from None
            except (urllib.error.URLError, OSError, http.client.HTTPException) as error:
                if _is_timeout(error):
                    raise BackendError(f"{where} did not answer within {self.timeout_seconds:g}s",
                                       code="TIMEOUT", retryable=True) from None
                reason = getattr(error, "reason", error)
                last, hint = BackendError(f"cannot reach {where}: {reason}", code="CONNECTION", retryable=True), None
                continue
            try:
                data = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                raise BackendError(f"{where} answered with something that is not JSON: "
                                   f"{raw[:200].decode('utf-8', errors='replace')!r}",
                                   code="BAD_RESPONSE", retryable=False) from None
            if not isinstance(data, dict):
                raise BackendError(f"{where} answered with JSON that is not an object", code="BAD_RESPONSE",
                                   retryable=False)
            return data
        assert last is not None
        tries = self.max_retries + 1
        raise BackendError(f"{last} (gave up after {tries} tr{'y' if tries == 1 else 'ies'})",
                           code=last.code, retryable=True)

    def _read_stream(self, response: Any, where: str) -> dict:
        """A chat completion's body from its stream of chunks: the first choice's content
        deltas joined, the last model named, the last usage sent. Failures are BackendErrors
        (never OSErrors), so that a stream begun is never sent again."""
        pieces: list[str] = []
        texts = chunks = 0
        choice_seen = False
        usage: dict | None = None
        model = ""
        completion_id = ""
        finish_reason = None
        calls: dict[int, dict] = {}  # a tool call's deltas, joined, by its index

        def malformed(what: str, event: str) -> BackendError:
            return BackendError(f"{where} sent a stream event {what}: {event[:200]!r}", code="BAD_RESPONSE",
                                retryable=False)

        try:
            for event in sse_data(response):
                if event.strip() == "[DONE]":
                    break
                try:
                    chunk = json.loads(event)
                except ValueError:
                    raise malformed("that is not JSON", event) from None
                if not isinstance(chunk, dict):
                    raise malformed("that is not a JSON object", event)
                chunks += 1
                if chunk.get("error") is not None:
                    raise BackendError(f"{where} reported an error in the middle of its stream: "
                                       f"{_server_message(event.encode())}", code="BAD_RESPONSE", retryable=True)
                if isinstance(chunk.get("usage"), dict):
                    usage = chunk["usage"]  # the last one: cumulative, or the only one
                if isinstance(chunk.get("model"), str) and chunk["model"]:
                    model = chunk["model"]
                if isinstance(chunk.get("id"), str) and chunk["id"]:
                    completion_id = chunk["id"]
                choices = chunk.get("choices") or []
                if not isinstance(choices, list):
                    raise malformed("whose choices are not a list", event)
                for choice in choices:
                    delta = choice.get("delta") if isinstance(choice, dict) else None
                    if not isinstance(choice, dict) or not isinstance(delta if delta is not None else {}, dict):
                        raise malformed("with a choice that is not a delta", event)
                    if choice.get("index", 0) != 0:
                        continue
                    choice_seen = True
                    for part in (delta or {}).get("tool_calls") or []:
                        if not isinstance(part, dict) or not isinstance(part.get("index", 0), int):
                            raise malformed("with a tool call delta that is not one", event)
                        joined = calls.setdefault(part.get("index", 0), {"id": "", "type": "function",
                                                                         "function": {"name": "", "arguments": ""}})
                        joined["id"] = part.get("id") or joined["id"]
                        function = part.get("function") or {}
                        joined["function"]["name"] += function.get("name") or ""
                        joined["function"]["arguments"] += function.get("arguments") or ""
                    content = (delta or {}).get("content")
                    if isinstance(content, str):
                        pieces.append(content)
                        texts += 1
                    elif content is not None:
                        raise malformed("whose delta content is not text", event)
                    if choice.get("finish_reason"):
                        finish_reason = choice["finish_reason"]
        except StreamBrokeOff:
            raise BackendError(f"the stream from {where} broke off before data: [DONE], after {chunks} chunk(s) "
                               f"and {sum(map(len, pieces))} characters of reply: the reply is incomplete",
                               code="BAD_RESPONSE", retryable=True) from None
        except (OSError, http.client.HTTPException) as error:
            if _is_timeout(error):
                raise BackendError(f"{where} sent nothing for {self.timeout_seconds:g}s in the middle of its stream "
                                   f"(after {chunks} chunk(s))", code="TIMEOUT", retryable=True) from None
            raise BackendError(f"the stream from {where} broke off after {chunks} chunk(s) "
                               f"({type(error).__name__}: {error}): the reply is incomplete",
                               code="BAD_RESPONSE", retryable=True) from None
        if not choice_seen:
            raise BackendError(f"the stream from {where} carried no choices[0] in its {chunks} chunk(s)",
                               code="BAD_RESPONSE", retryable=False)
        data: dict[str, Any] = {
            "id": completion_id, "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "finish_reason": finish_reason,
                         "message": {"role": "assistant", "content": "".join(pieces) if texts else None}}],
        }
        if calls:
            data["choices"][0]["message"]["tool_calls"] = [calls[index] for index in sorted(calls)]
        if usage is not None:
            data["usage"] = usage
        return data

    def _delay(self, attempt: int, hint: float | None) -> float:
        """Before try `attempt + 1`: Retry-After when the server gave one, else
        backoff_seconds × 2^(attempt−1); never more than max_backoff_seconds."""
        delay = hint if hint is not None else self.backoff_seconds * 2 ** (attempt - 1)
        return min(self.max_backoff_seconds, max(0.0, delay))
