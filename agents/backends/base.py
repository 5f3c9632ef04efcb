"""What every LLM backend takes and gives.

A backend is defined by an operator in settings (`LLM_BACKENDS`) and named by an agent;
workflow authors never define one. The execution service builds a `BackendRequest` for
each node run and stores what the `BackendResponse` says.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from engine.errors import EngineError


@dataclass
class BackendRequest:
    agent_id: str
    skills: list[str]  # what the agent running the node can do (capabilities.skills)
    required_skills: list[str]  # the skills of the node's own agent: a fallback must share one
    system_prompt: str
    prompt: str  # everything sent as the user message: instructions and the data sections
    inputs: dict[str, Any] = field(default_factory=dict)  # input name → the data passed (structured)
    state: dict[str, Any] = field(default_factory=dict)  # the execution's state (state machines)
    execution_input: dict[str, Any] = field(default_factory=dict)
    node_id: str = ""
    execution_id: str = ""
    attempt: int = 1
    model: str = ""
    max_output_tokens: int = 16_000
    # The encoding the agent's tokens are counted in (its model's, as the catalogue names
    # it); "" for the catalogue's, or cl100k_base where it names none.
    encoding: str = ""
    # The tools the agent may call this turn, each {"name": "server.tool", "description",
    # "input_schema"} (empty: it calls none), and the conversation since the prompt: the
    # model's turns that asked for calls, {"role": "assistant", "text", "tool_calls": [{"id",
    # "name", "arguments"}]}, each followed by its calls' results, {"role": "tool", "id",
    # "name", "status" ("success" or an error code), "content"} (the result, or the error).
    tools: list[dict[str, Any]] = field(default_factory=list)
    transcript: list[dict[str, Any]] = field(default_factory=list)
    parallel_tool_calls: bool = True  # whether the model may ask for several calls in one turn


@dataclass
class BackendResponse:
    output: Any  # a JSON value; objects are what output_mapping and conditions read
    tokens_in: int
    tokens_out: int
    backend: str
    model: str
    text: str = ""  # the raw reply, when the backend produced text
    # The calls the model asks for instead of answering, each {"id", "name", "arguments"}
    # (`arguments` as the model wrote them: a JSON object, or the text it sent when that is
    # not one). Non-empty: `output` is None, and the caller runs them and asks again.
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ToolRequest:
    """What a builtin skill answers to ask for tool calls rather than answer: each call
    {"name": "server.tool", "arguments": {...}}; the backend gives each its id."""

    calls: list[dict[str, Any]]


class BackendError(EngineError):
    """A backend could not answer. `retryable` says whether trying again may help;
    `code` is e.g. CAPABILITY_GAP, TIMEOUT, HTTP_429, BAD_OUTPUT; `details` what a
    program can act on (a CAPABILITY_GAP names `missing_skills` and `missing_tools`).

    Not a request's error (`SwitchyardError`): the node run that met it records it."""

    code = "BACKEND_ERROR"

    def __init__(self, message: str, *, code: str | None = None, retryable: bool = True,
                 details: dict | None = None):
        super().__init__(message, code=code, details=details or {})
        self.retryable = retryable


class Backend(ABC):
    name = "backend"
    label = ""  # how pages name it; the builtin says it is not a model
    # Whether `summarize` writes a summary of its own (an abstractive one, §4.2). The
    # builtin's is extractive, so the context builder records it as such.
    abstractive = True

    @abstractmethod
    def complete(self, request: BackendRequest) -> BackendResponse:
        """Answer one node run's request."""

    @abstractmethod
    def summarize(self, text: str, target_tokens: int, *, model: str = "") -> str:
        """An abstractive summary (data-transfer-protocol §4.2) or a compression
        (parallel-agent-compression) of `text` to about `target_tokens`."""
