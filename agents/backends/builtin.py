"""The `builtin` backend: deterministic, offline behaviours named by skill. Not a model.

Each skill in an agent's `capabilities.skills` that this module knows is a small function
from a `BackendRequest` to a JSON object, computed only from the request's inputs, state
and execution input: the same request always gives the same output, and nothing leaves
the machine. The outputs are meant to be inspected, so they are small, plain and say
where their figures are synthetic.

It holds the skills the product itself needs (the judge, `noop` for benchmarks, `respond`,
the Game-of-24 roles) and extractive summaries for compression. Another app adds its own
with `register_skill` (the demo app registers the skills only its agents perform, the §7.1
reading chain's among them); the helpers such skills read a request with are public here.

`choose_skill` is the rule every backend shares for which skill a node run performs.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

from engine.context.summary import summarize as summarize_data
from engine.tokens import DEFAULT_ENCODING, TokenCounter, get_encoding
from engine.tot.errors import ToTError
from engine.tot.game24 import builtin_roles as game24_roles
from engine.tot.messages import check_message, make_message

from .base import Backend, BackendError, BackendRequest, BackendResponse, ToolRequest
from .metering import counting_encoding, record_call


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Tokens of `text` in `encoding` (offline); what backends report when a server does not.
    A call is counted in its model's encoding (metering.counting_encoding says which)."""
    if not text:
        return 0
    return len(get_encoding(encoding).encode(text, disallowed_special=()))


def output_text(output: Any) -> str:
    """The text a JSON output is passed on as (and counted as)."""
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)


# --------------------------------------------------------------------------- the skill rule


# What a node whose agent has no skills is answered with: it asks for no skill in particular.
NO_SKILL = "respond"


def choose_skill(request: BackendRequest) -> str:
    """The skill a node run performs: the first of the executing agent's skills
    (`request.skills`) that the node's own agent has too (`request.required_skills`).

    An agent running its own node performs its first skill; a fallback agent runs a node
    only if it shares a skill with the node's agent, else CAPABILITY_GAP (not retryable).
    A node whose agent has no skills needs none: whoever runs it answers it (`respond`)."""
    if not request.required_skills:
        return NO_SKILL
    required = set(request.required_skills)
    for skill in request.skills:
        if skill in required:
            return skill
    agent = request.agent_id or "the agent"
    raise BackendError(
        f"{agent} cannot run node {request.node_id or '?'}: the node needs one of the skills "
        f"{_names(request.required_skills)} (its agent's), and {agent} has {_names(request.skills)}",
        code="CAPABILITY_GAP",
        retryable=False,
        details={"missing_skills": list(request.required_skills)},
    )


def _names(skills: list[str]) -> str:
    return "[" + ", ".join(skills) + "]" if skills else "none"


# --------------------------------------------------------------------------- reading inputs

# Keys that describe data rather than hold it (§4.3 reference objects, file reads, §4.2 counts).
_META_KEYS = frozenset({
    "ref_type", "task_id", "path", "table", "format", "encoding", "transfer_mode", "reference",
    "available_paths", "data_stats", "conditions", "select", "order_by", "limit", "omitted_fields",
    "missing_sections", "preview_count", "atom_id", "atom_type", "source_section", "paper_id", "domain",
    "created_at", "updated_at", "relation_id", "record_id",
})


# Inputs that carry the agent's own prompt, not data: the runner passes them as items too.
PROMPT_INPUTS = frozenset({"system_prompt", "task_instructions", "instructions"})


def data_inputs(request: BackendRequest) -> dict[str, Any]:
    """The named data inputs: not the agent's prompt, nor the engine's own `_`-prefixed
    entries (such as `_batch`)."""
    return {name: value for name, value in request.inputs.items()
            if not str(name).startswith("_") and name not in PROMPT_INPUTS}


def input_value(request: BackendRequest, key: str) -> Any:
    """An input by name, else the execution input's, else the state's; None when none has it."""
    for source in (request.inputs, request.execution_input, request.state):
        if isinstance(source, dict) and source.get(key) is not None:
            return source[key]
    return None


def texts_in(value: Any) -> list[str]:
    """Every piece of text in a value, in order: strings, string values of dicts (not the
    keys that only describe data) and of lists; a file read by sections comes back as
    markdown with its headings."""
    found: list[str] = []

    def walk(item: Any) -> None:
        if isinstance(item, str):
            if item.strip():
                found.append(item)
        elif isinstance(item, dict):
            sections = item.get("sections")
            if isinstance(sections, dict) and sections:
                for heading, text in sections.items():
                    found.append(f"## {heading}\n\n" + "\n\n".join(texts_in(text)))
                return
            for key, inner in item.items():
                if str(key).startswith("_") or key in _META_KEYS:
                    continue
                walk(inner)
        elif isinstance(item, (list, tuple)):
            for inner in item:
                walk(inner)

    walk(value)
    return found


def text_of(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    return "\n\n".join(text.strip() for text in texts_in(value))


def stable_int(*parts: Any) -> int:
    digest = hashlib.sha256("\x1f".join(output_text(p) for p in parts).encode()).hexdigest()
    return int(digest[:16], 16)


def as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


# --------------------------------------------------------------------------- benchmarking


_PLACEHOLDER = re.compile(r"^\s*(TODO|TBD|XXX|FIXME|lorem ipsum)\b|^\s*(\.\.\.|…)\s*$", re.I)


def judge_outputs(request: BackendRequest) -> dict:
    """A rule-based judge of a run's final outputs (`inputs["outputs"]`, node id → output),
    for the evaluation's accuracy: each output must be present, free of placeholder text
    and not an error object. Score: the share of those checks that hold."""
    outputs = request.inputs.get("outputs") or {}
    if not isinstance(outputs, dict) or not outputs:
        return {"score": 0.0, "feedback": ["no node produced an output"]}
    passed, total, feedback = 0, 0, []
    for node_id, output in outputs.items():
        text = text_of(output)
        # A value that is a placeholder ("TBD", "TODO: write this"), not one that mentions one.
        placeholder = any(_PLACEHOLDER.match(piece) for piece in texts_in(output))
        for holds, problem in (
            (bool(text.strip()), "is empty"),
            (not placeholder, "has a placeholder where a value should be"),
            (not (isinstance(output, dict) and "error" in output and len(output) == 1), "is only an error"),
        ):
            total += 1
            passed += holds
            if not holds:
                feedback.append(f"the output of {node_id} {problem}")
    return {"score": round(passed / total, 4),
            "feedback": feedback or [f"{len(outputs)} output(s) present, without placeholders or errors"],
            "judge": "builtin rules (not a model)"}


RESPOND_TOKENS = 300  # the length of the digest `respond` gives


def respond(request: BackendRequest) -> dict:
    """An agent with no skills, on the builtin: an extractive digest of what it was given
    (its data inputs, else its task), labelled as such, since the builtin writes nothing of
    its own."""
    text = text_of(data_inputs(request)) or text_of(request.prompt)
    digest = summarize_data(text, target_tokens=RESPOND_TOKENS, counter=TokenCounter(request.encoding or DEFAULT_ENCODING),
                            method="extractive")
    return {"response": output_text(digest.content), "inputs": sorted(data_inputs(request)),
            "note": "builtin: not a model; an agent without skills gets an extractive digest of its inputs"}


def noop(request: BackendRequest) -> dict:
    """Nothing at all: what `benchmark_execution` runs to time the orchestration around a node."""
    return {"ok": True}


# --------------------------------------------------------------------------- Tree of Thoughts

# The request each Game-of-24 role answers, and its reply (tot-protocol 1, 2, 3, 5).
GAME24_ROLES = {
    "game24_decompose": ("decomposer", "decompose_task", "decomposition_result"),
    "game24_generate": ("generator", "generate_thoughts", "generated_thoughts"),
    "game24_evaluate": ("evaluator", "evaluate_thoughts", "evaluation_results"),
    "game24_synthesize": ("synthesizer", "synthesize_solution", "final_solution"),
}


def game24(request: BackendRequest, skill: str) -> dict:
    """A role of a Game-of-24 search (executions/node_kinds/tot.py calls the role's agent with the
    protocol message as `inputs["message"]`): the engine's builtin role, exact arithmetic.
    A request that breaks the protocol is answered with the seed's `error` field
    (INVALID_FORMAT), as the protocol answers any message it cannot take."""
    role, asked, answer = GAME24_ROLES[skill]
    message = request.inputs.get("message")
    if not isinstance(message, dict):
        raise BackendError(f"{skill} answers a Tree-of-Thoughts `{asked}` message (inputs['message']); "
                           "this node run has none: the skill is meant for a role of a search",
                           code="BAD_INPUT", retryable=False)
    try:
        check_message(message, asked)
        return game24_roles()[role](message)
    except ToTError as error:
        sender, task = message.get("from"), message.get("task_id")
        to = sender if isinstance(sender, str) and sender else "explorer"
        task_id = task if isinstance(task, str) else ""
        return make_message(role, to, answer, {}, task_id, error=error)


# --------------------------------------------------------------------------- the backend

# A skill answers an output (a JSON object), or a ToolRequest for tool calls to be made first.
Skill = Callable[[BackendRequest], dict | ToolRequest]
# The product's own skills; an app adds its own with `register_skill` (the demo app does, from
# its AppConfig.ready()), so this module never imports the apps that use it.
SKILLS: dict[str, Skill] = {
    "noop": noop,
    NO_SKILL: respond,
    "judge_outputs": judge_outputs,
    **{skill: functools.partial(game24, skill=skill) for skill in GAME24_ROLES},
}
# The search itself (orchestrator and explorer) is the node run, not a backend: executions/node_kinds/tot.py.
SEARCH_SKILLS = ("tot_orchestrate", "tot_explore")


def register_skill(name: str, perform: Skill) -> Skill:
    """Let the builtin backend perform `name` with `perform`. Registering the same function
    again changes nothing; another function under a name already taken is refused, so an
    app cannot silently replace a skill the product relies on."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a builtin skill is named by a non-empty string, not {name!r}")
    if name in SEARCH_SKILLS:
        raise ValueError(f"{name} is the Tree-of-Thoughts search itself, not a skill a backend performs")
    current = SKILLS.get(name)
    if current is not None and current is not perform:
        raise ValueError(f"the builtin skill {name!r} is already performed by {_qualified(current)}; "
                         f"{_qualified(perform)} cannot replace it")
    SKILLS[name] = perform
    return perform


def _qualified(function: Callable) -> str:
    return f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', repr(function))}"


class BuiltinBackend(Backend):
    name = "builtin"
    label = "builtin (deterministic, offline; not a model)"
    abstractive = False  # its summaries are extractive

    def __init__(self, name: str = "builtin"):
        self.name = name

    def complete(self, request: BackendRequest) -> BackendResponse:
        # The builtin is no model: its tokens are counted in the agent's encoding.
        encoding = counting_encoding(self.name, request.model, request.encoding)
        request = dataclasses.replace(request, encoding=encoding)
        skill = choose_skill(request)
        perform = SKILLS.get(skill)
        if perform is None:
            if skill in SEARCH_SKILLS:
                raise BackendError(f"{skill} is not a backend's skill: a node whose agent has tot_orchestrate runs a "
                                   "Tree-of-Thoughts search, in which the search plays the orchestrator and the "
                                   "explorer", code="NOT_IMPLEMENTED", retryable=False)
            raise BackendError(
                f"the builtin backend has no behaviour for skill {skill!r} (it performs {', '.join(SKILLS)})",
                code="UNKNOWN_SKILL", retryable=False,
            )
        output: Any = perform(request)
        tool_calls = []
        if isinstance(output, ToolRequest):  # a skill that uses tools asks for calls first
            turn = sum(1 for message in request.transcript if message.get("role") == "assistant") + 1
            tool_calls = [{"id": f"call_{turn}_{number}", "name": call["name"], "arguments": call["arguments"]}
                          for number, call in enumerate(output.calls, start=1)]
            output = None
        text = output_text(output if output is not None else {"tool_calls": tool_calls})
        tokens_in = count_tokens(request.system_prompt, encoding) + count_tokens(request.prompt, encoding) + sum(
            count_tokens(output_text(message), encoding) for message in request.transcript)
        tokens_out = count_tokens(text, encoding)
        record_call(backend=self.name, model="builtin", tokens_in=tokens_in, tokens_out=tokens_out, usage="builtin",
                    encoding=encoding)
        return BackendResponse(output=output, tokens_in=tokens_in, tokens_out=tokens_out, backend=self.name,
                               model="builtin", text=text, tool_calls=tool_calls)

    def summarize(self, text: str, target_tokens: int, *, model: str = "") -> str:
        """An extractive summary (the builtin writes nothing of its own)."""
        summary = summarize_data(text, target_tokens=target_tokens, counter=TokenCounter(DEFAULT_ENCODING),
                                 method="extractive")
        return output_text(summary.content)
