"""The `command` backend: a local program as the model (a CLI that calls one, a script).

Options (settings only, never workflow documents):

- `argv` — the program and its arguments, a list of strings; run without a shell;
- `timeout_seconds` — after this the program (and whatever it started in its process
  group) is killed and the run gets a retryable TIMEOUT;
- `env` — names of environment variables passed through (e.g. an API key the program
  needs); otherwise it sees only PATH, HOME, LANG, LC_ALL, TMPDIR and SWITCHYARD_* values
  describing the call, never the server's secrets;
- `model` — passed as SWITCHYARD_MODEL when the agent names none.

The system prompt, a blank line and the prompt go on stdin; stdout is the reply, read as
JSON when it is a JSON object or array (also inside a ```json fence), else {"text": …}.
A non-zero exit is a retryable COMMAND_FAILED carrying the end of stderr.

For a node run, the program also sees SWITCHYARD_DISPATCH (1, and one more each time the
node run is sent to a worker again after its worker went silent) and
SWITCHYARD_IDEMPOTENCY_KEY (the same for the same call in every dispatch; see dispatch.py),
for a program that calls a paid service to pass on. Its process is recorded on the node
run, and ended if it still runs when the node run is sent again; and its process group is
killed at once when the node run is cancelled (core/cancellation.py), the call then raising
Cancelled.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
from typing import Any

from core.cancellation import stoppable

from .base import Backend, BackendError, BackendRequest, BackendResponse
from .builtin import count_tokens
from .dispatch import dispatch_number, idempotency_key, process_started
from .metering import check_call, counting_encoding, record_call
from .openai import parse_reply, summary_instruction, summary_text

BASE_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
STDERR_TAIL_CHARS = 1000


def _tail(text: str, limit: int = STDERR_TAIL_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]


class CommandBackend(Backend):
    def __init__(self, name: str = "command", *, argv: list[str], timeout_seconds: float = 120,
                 env: list[str] | None = None, model: str = ""):
        if not (isinstance(argv, (list, tuple)) and argv and all(isinstance(a, str) and a for a in argv)):
            raise BackendError(f"backend {name!r}: argv must be a non-empty list of strings, not {argv!r}",
                               code="BAD_BACKEND_CONFIG", retryable=False)
        if env is not None and not (isinstance(env, (list, tuple)) and all(isinstance(e, str) for e in env)):
            raise BackendError(f"backend {name!r}: env must be a list of variable names", code="BAD_BACKEND_CONFIG",
                               retryable=False)
        self.name = name
        self.argv = list(argv)
        self.timeout_seconds = float(timeout_seconds)
        self.passthrough = list(env or [])
        self.model = model
        self.label = f"{name}: the command {os.path.basename(self.argv[0])} (prompt on stdin, reply on stdout)"

    def complete(self, request: BackendRequest) -> BackendResponse:
        stdin = f"{request.system_prompt}\n\n{request.prompt}" if request.system_prompt else request.prompt
        model = request.model or self.model
        # A command reports no usage: its tokens are counted here, in its model's encoding.
        encoding = counting_encoding(self.name, model, request.encoding)
        check_call(backend=self.name, model=model, tokens_in=count_tokens(stdin, encoding),
                   max_tokens=request.max_output_tokens)
        stdout = self.run(stdin, {
            "SWITCHYARD_AGENT_ID": request.agent_id,
            "SWITCHYARD_NODE_ID": request.node_id,
            "SWITCHYARD_EXECUTION_ID": request.execution_id,
            "SWITCHYARD_ATTEMPT": str(request.attempt),
            "SWITCHYARD_MODEL": model,
            "SWITCHYARD_MAX_OUTPUT_TOKENS": str(request.max_output_tokens),
        })
        tokens_in, tokens_out = count_tokens(stdin, encoding), count_tokens(stdout, encoding)
        record_call(backend=self.name, model=model, tokens_in=tokens_in, tokens_out=tokens_out, usage="counted",
                    encoding=encoding)
        return BackendResponse(output=parse_reply(stdout), tokens_in=tokens_in, tokens_out=tokens_out,
                               backend=self.name, model=model or self.name, text=stdout)

    def summarize(self, text: str, target_tokens: int, *, model: str = "") -> str:
        stdin = f"{summary_instruction(target_tokens)}\n\n{text}"
        encoding = counting_encoding(self.name, model or self.model)
        check_call(backend=self.name, model=model or self.model, tokens_in=count_tokens(stdin, encoding),
                   max_tokens=max(32, target_tokens * 2))
        stdout = self.run(stdin, {"SWITCHYARD_MODEL": model or self.model, "SWITCHYARD_TASK": "summarize"})
        record_call(backend=self.name, model=model or self.model, tokens_in=count_tokens(stdin, encoding),
                    tokens_out=count_tokens(stdout, encoding), usage="counted", encoding=encoding)
        return summary_text(stdout)

    def environment(self, extra: dict[str, str]) -> dict[str, str]:
        env = {name: os.environ[name] for name in (*BASE_ENV, *self.passthrough) if name in os.environ}
        env.update({key: value for key, value in extra.items() if value})
        return env

    def run(self, stdin: str, extra_env: dict[str, str] | None = None) -> str:
        """The command's stdout for `stdin`. Runs in its own process group, so a timeout
        kills what it started too."""
        program = os.path.basename(self.argv[0])
        extra = dict(extra_env or {})
        dispatch = dispatch_number()
        if dispatch is not None:  # the call's key: what it is sent, whatever the dispatch
            described = json.dumps([self.argv, sorted(extra.items()), stdin], ensure_ascii=False)
            extra.update(SWITCHYARD_DISPATCH=str(dispatch), SWITCHYARD_IDEMPOTENCY_KEY=idempotency_key(
                described.encode()) or "")
        try:
            process = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=self.environment(extra), shell=False, start_new_session=True,
                text=True, encoding="utf-8", errors="replace",
            )
        except OSError as error:  # not found, not executable
            raise BackendError(f"backend {self.name!r} cannot start {self.argv[0]!r}: {error.strerror or error}",
                               code="COMMAND_NOT_FOUND", retryable=False) from None
        try:
            process_started(process.pid)
            # A cancel of the node run kills the group from the heartbeat's thread; the
            # communicate then returns, and Cancelled is raised instead of its outcome.
            with stoppable(lambda: self._kill(process)):
                stdout, stderr = process.communicate(stdin, timeout=self.timeout_seconds)
        except subprocess.TimeoutExpired:
            self._kill(process)
            stderr = self._drain(process)
            message = f"{program} did not finish within {self.timeout_seconds:g}s and was killed"
            if stderr and stderr.strip():
                message += f"; stderr: {_tail(stderr)}"
            raise BackendError(message, code="TIMEOUT", retryable=True) from None
        except BaseException:  # a time limit, a cancel: what the command started ends with it
            self._kill(process)
            self._drain(process)
            raise
        if process.returncode != 0:
            status = (f"was killed by signal {-process.returncode}" if process.returncode < 0
                      else f"exited with status {process.returncode}")
            raise BackendError(f"{program} {status}: {_tail(stderr) or '(no stderr)'}", code="COMMAND_FAILED",
                               retryable=True)
        if not stdout.strip():
            raise BackendError(f"{program} printed nothing on stdout" + (f"; stderr: {_tail(stderr)}" if stderr.strip() else ""),
                               code="BAD_OUTPUT", retryable=True)
        return stdout

    @staticmethod
    def _drain(process: subprocess.Popen[Any]) -> str:
        """What is left of stderr once the group is dead (a descendant that left the group
        may still hold the pipes: then give up after a few seconds)."""
        try:
            return process.communicate(timeout=5)[1] or ""
        except subprocess.TimeoutExpired:
            return ""

    @staticmethod
    def _kill(process: subprocess.Popen[Any]) -> None:
        """SIGKILL the process group the command leads (it was started in a new session)."""
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            process.kill()
        except ProcessLookupError:
            pass
