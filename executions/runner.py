"""Performing one node run: its context, its prompt, the backend call, the contract check.

`perform` is how a node of the kind `llm` runs (executions/nodes.py): it reads rows and
calls the pure engine and the agent's backend. It writes no row: what it did goes back in
`Performed`, and its only write is a compressed output, to the shared compression cache.
The helpers here serve the other kinds too (executions/tot.py). The services in
`executions/services/node_run.py` claim the run before and store the result after.
"""
from __future__ import annotations

import json
import operator
import re
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from django.conf import settings
from django.db.models import Q, Subquery

from agents.backends import BackendError, BackendRequest, get_backend
from agents.backends.metering import calling
from agents.models import Agent
from executions.compression_cache import RedisCompressionCache
from executions.context import assemble_node_context
from engine import compression
from engine.context.batching import aggregate
from engine.context.errors import RefError
from engine.context.resolution import NOT_READY, ResolutionAborted, Resolver, Sources
from engine.context.trimming import InstructionsTooLarge
from engine.errors import EngineError
from engine.json_schema import SchemaValidator
from engine.scheduling import Plan
from engine.tokens import TokenCounter, UnknownEncoding, check_encoding
from executions.models import NodeRun
from workflows.models import Contract, Node

PROMPT_LIMIT = 200_000  # characters of the prompt kept on the node run
INPUT_PREVIEW_LIMIT = 20_000  # characters of each resolved input kept; the full data stays at its source
NODE_PATH = re.compile(r"^\$\.nodes\.([A-Za-z0-9][A-Za-z0-9_:\-]*)(?:[.\[]|$)")
COMPRESSION_CACHE = RedisCompressionCache()


class NodeFailure(EngineError):
    """A node run that failed: its code, whether a retry may help, and the fields of the
    run to store. Recorded on the run, never answered to a request."""

    code = "NODE_FAILED"

    def __init__(self, message: str, *, code: str, retryable: bool, record: dict | None = None,
                 details: dict | None = None):
        super().__init__(message, code=code, details=details or None)
        self.retryable = retryable
        self.record = record or {}


@dataclass
class Performed:
    output: Any
    record: dict = field(default_factory=dict)  # fields of the node run to store


def perform(run: NodeRun, graph, node: Node) -> Performed:
    """Perform a node of the kind `llm` (executions/nodes.py): one prompt, or one per batch,
    to the agent's backend. `graph` is the workflow's `executions.services.graph.Graph`: its plan,
    nodes and contracts."""
    plan = graph.plan
    execution = run.execution
    agent = run.agent
    try:
        backend = get_backend(agent.backend)
    except BackendError as error:  # defined badly, or no longer defined: no retry builds it better
        raise NodeFailure(str(error), code=error.code, retryable=False) from None
    outputs = latest_outputs(execution, needed_outputs(node, plan))
    scope = {"input": execution.input, "state": execution.state, "nodes": outputs}
    record: dict[str, Any] = {"backend": agent.backend, "model": agent.model or ""}
    encoding = counting_encoding(agent)

    node_input = dict(node.input_mapping)
    references = list(node_input.get("data_references", []))
    named, missing = named_inputs(node, scope)
    items = prompt_items(agent) + named
    if node.compress:
        items, references, record["compression"] = compress_dependencies(node, plan, outputs, references, items, agent)
    messages = [{"kind": "state", "data": execution.state}] if execution.state else []

    def task_output(task_id: str) -> Any:
        if task_id in outputs:
            return outputs[task_id]
        if execution.node_runs.filter(node_id=task_id, status__in=["pending", "running"]).exists():
            return NOT_READY
        raise RefError("REF_NOT_FOUND", f"task '{task_id}' has no successful output in this run")

    try:
        assembly = assemble_node_context(
            limits=agent.context_limits, encoding=encoding, task_id=node.node_id,
            node_input={"data_references": references, "transfer_config": node_input.get("transfer_config")},
            task_output=task_output, items=items, messages=messages,
            abstractive=abstractive_summarizer(backend, agent.model),
            host=worker_name(run),
        )
    except ResolutionAborted as aborted:
        raise NodeFailure(str(aborted), code=aborted.failure.error_code, retryable=False,
                          record={"resolution_failures": missing + aborted.failures}) from None
    except InstructionsTooLarge as error:  # another attempt would meet the same limit
        raise NodeFailure(str(error), code=error.code, retryable=False, details=error.details) from None
    record.update(context_record=assembly.record, resolution_failures=missing + assembly.failures,
                  resolved_inputs=[bounded(report.as_dict()) for report in assembly.inputs])

    system_prompt = (agent.prompt_config or {}).get("system_prompt", "")
    # A fallback agent must share a skill with the node's own agent (`node` is shared
    # within the process, so its agent is read here rather than through it).
    required = skills(agent if node.agent_id == agent.pk else Agent.objects.only("capabilities").get(pk=node.agent_id))
    replies, prompts, tokens_in, tokens_out = [], [], 0, 0
    for call in range(assembly.batch_count):
        texts = assembly.texts(call)
        prompt = render_prompt(texts)
        prompts.append(prompt)
        inputs = dict(zip((name for name, _ in texts), batch_contents(assembly, call)))
        request = BackendRequest(
            agent_id=agent.agent_id, skills=skills(agent), required_skills=required,
            system_prompt=system_prompt, prompt=prompt, inputs=inputs, state=dict(execution.state),
            execution_input=dict(execution.input), node_id=node.node_id, execution_id=execution.execution_id,
            attempt=run.attempt, model=agent.model, max_output_tokens=agent.max_output_tokens, encoding=encoding,
        )
        try:
            with calling(f"batch {call + 1}/{assembly.batch_count}" if assembly.batch_count > 1 else "node"):
                response = backend.complete(request)
        except BackendError as error:
            raise NodeFailure(str(error), code=error.code, retryable=error.retryable, record=record,
                              details=error.details) from None
        replies.append(response.output)
        tokens_in += response.tokens_in
        tokens_out += response.tokens_out
        record.update(backend=response.backend, model=response.model)
    output = replies[0] if len(replies) == 1 else aggregate(replies, batch_aggregation(assembly))
    prompt_text = "\n\n=== next batch ===\n\n".join(prompts)
    record.update(prompt=prompt_text[:PROMPT_LIMIT], tokens_in=tokens_in, tokens_out=tokens_out)
    check_contracts(node, plan, output, record, graph.contracts)
    return Performed(output, record)


def counting_encoding(agent) -> str:
    """The encoding the agent's tokens are counted in (its model's, as the catalogue names it);
    a NodeFailure when Switchyard cannot count it, for another encoding's counts would put
    the budget, trimming and cost bounds in the wrong units."""
    try:
        return check_encoding(agent.token_encoding)
    except UnknownEncoding as error:
        raise NodeFailure(f"{agent.agent_id}'s tokens cannot be counted: {error}", code=error.code,
                          retryable=False) from None


def abstractive_summarizer(backend, model: str):
    """The backend's summaries for §4.2's abstractive strategy, or None when it writes none
    of its own (the builtin): the summary is then extractive and recorded as such."""
    if not backend.abstractive:
        return None
    def summarize(text: str, target: int) -> str:
        with calling("summary"):
            return backend.summarize(text, target, model=model)

    return summarize


def worker_name(run: NodeRun) -> str:
    """The worker running `run`: its claim reads `<worker>/<nonce>`."""
    return run.worker.rsplit("/", 1)[0]


def needed_outputs(node: Node, plan: Plan) -> set[str] | None:
    """The nodes whose outputs this node reads (None: it may read any, via `$.nodes`)."""
    needed = {ref["task_id"] for ref in node.input_mapping.get("data_references", []) if ref["ref_type"] == "task_output"}
    if node.compress:
        needed.update(plan.dependencies(node.node_id))
    for name, value in node.input_mapping.items():
        if name not in ("data_references", "transfer_config") and isinstance(value, str) and value.startswith("$.nodes"):
            match = NODE_PATH.match(value)
            if not match:
                return None
            needed.add(match.group(1))
    return needed


def latest_outputs(execution, node_ids: set[str] | None = None) -> dict[str, Any]:
    """The latest successful output of each node (of those asked for) in this run. Asked
    for by name, each node's is found from its last run backwards (an index of its runs by
    sequence), in one statement, however many runs the node has had."""
    if node_ids is not None and not node_ids:
        return {}
    runs = execution.node_runs.filter(status="success")
    if node_ids is not None:
        latest = [Subquery(runs.filter(node_id=node_id).order_by("-sequence", "-id").values("pk")[:1])
                  for node_id in sorted(node_ids)]
        return dict(NodeRun.objects.filter(reduce(operator.or_, (Q(pk=run) for run in latest)))
                    .order_by("sequence", "id").values_list("node_id", "output"))
    outputs = {}
    for node_id, output in runs.order_by("sequence", "id").values_list("node_id", "output"):
        outputs[node_id] = output
    return outputs


def skills(agent) -> list[str]:
    return list((agent.capabilities or {}).get("skills", []))


def prompt_items(agent) -> list[dict]:
    """The agent's system prompt and its instructions, passed whole (priority 1)."""
    config = agent.prompt_config or {}
    items = []
    if config.get("system_prompt"):
        items.append({"name": "system_prompt", "content": config["system_prompt"], "data_type": "system_prompt"})
    instructions = "\n".join(config[key] for key in ("role_play", "task_context", "thinking_process",
                                                      "output_constraint") if config.get(key))
    if instructions:
        items.append({"name": "task_instructions", "content": instructions, "data_type": "instructions"})
    return items


def named_inputs(node: Node, scope: dict) -> tuple[list[dict], list[dict]]:
    """input_mapping's other keys: a JSONPath over the run (`$.input…`, `$.state…`,
    `$.nodes.<id>…`) or a constant, passed as an inline item under its name; and the
    resolution failure of each path that selects nothing (the run has no such input, or
    not yet: state before the first review), which is left out."""
    items, failures = [], []
    resolver = Resolver(Sources())
    for name, value in node.input_mapping.items():
        if name in ("data_references", "transfer_config"):
            continue
        if isinstance(value, str) and value.startswith("$"):
            resolved = resolver.resolve_named(name, value, scope)
            failures += [failure.as_dict() for failure in resolved.failures]
            if resolved.skipped:
                continue
            value = resolved.data
        if value is not None:
            items.append({"name": name, "content": value, "priority": 1})
    return items, failures


def compress_dependencies(node, plan, outputs, references, items, agent):
    """parallel-agent-compression: the node's dependencies' outputs, compressed, go in one
    block under the seed's header; the references to them are replaced by it."""
    dependencies = [dep for dep in plan.dependencies(node.node_id) if dep in outputs]
    texts = {dep: as_text(outputs[dep]) for dep in dependencies}
    counter = TokenCounter(counting_encoding(agent))
    result = compression.compress_dependencies(
        texts, ratio=node.compress_ratio, model=node.compress_model, cache=COMPRESSION_CACHE,
        compressor=compressor_for(agent, counter, node.compress_model), counter=counter,
        model_called=compress_model_called(agent, node.compress_model),
    )
    remaining = [ref for ref in references if not (ref["ref_type"] == "task_output" and ref["task_id"] in texts)]
    items = items + [{"name": "compressed_dependencies", "content": result.text, "priority": 1}]
    return items, remaining, result.record()


def as_text(output: Any) -> str:
    """An output as lines of text, so that compression (which works on lines) sees a long
    report as the many lines it is rather than one JSON string."""
    if isinstance(output, str):
        return output
    if isinstance(output, dict):
        lines = []
        for key, value in output.items():
            if isinstance(value, str) and "\n" in value:
                lines += [f"{key}:", value]
            else:
                lines.append(f"{key}: {json.dumps(value, ensure_ascii=False)}")
        return "\n".join(lines)
    if isinstance(output, list):
        return "\n".join(json.dumps(element, ensure_ascii=False) for element in output)
    return json.dumps(output, ensure_ascii=False)


def compression_backend(agent, name: str):
    """The backend and model a compression with compress_model `name` (flash, pro) calls: the
    operators' alias of that name (a backend and a model, in SWITCHYARD_BACKENDS_FILE), else
    on the agent's backend its COMPRESS_MODELS entry, the agent's own model or the backend's
    default. The model is None for the builtin, which calls none."""
    alias = settings.MODEL_ALIASES.get(name)
    backend = get_backend(alias["backend"] if alias else agent.backend)
    if not backend.abstractive:
        return backend, None
    if alias:
        return backend, alias["model"]
    named = (settings.COMPRESS_MODELS.get(agent.backend) or {}).get(name)
    return backend, named or agent.model or getattr(backend, "model", "") or None


def compress_model_called(agent, name: str) -> str | None:
    return compression_backend(agent, name)[1]


def compressor_for(agent, counter: TokenCounter, name: str):
    """The builtin compresses extractively; a model backend is asked for a summary of
    `ratio` of the text's tokens (compression_backend says which backend and model)."""
    backend, _ = compression_backend(agent, name)
    if not backend.abstractive:
        return compression.extractive_compressor(counter)

    def compress(text: str, ratio: float, model: str) -> str:
        with calling("compression"):
            return backend.summarize(compression.compression_prompt(text, ratio),
                                     max(1, int(counter.count(text) * ratio)), model=model)

    return compress


def render_prompt(texts: list[tuple[str, str]]) -> str:
    return "\n\n".join(f"## {name}\n{text}" for name, text in texts if name != "system_prompt")


def batch_contents(assembly, call: int) -> list[Any]:
    contents = []
    for item in assembly.items:
        contents.append(item.batches[min(call, len(item.batches) - 1)] if item.batches else item.content)
    return contents


def batch_aggregation(assembly) -> str:
    for action in assembly.record["resolution"]["actions"]:
        if action["action"] == "batch":
            return action.get("aggregation", "merge")
    return "merge"


def bounded(report: dict) -> dict:
    text = json.dumps(report.get("content"), ensure_ascii=False, default=str)
    if len(text) > INPUT_PREVIEW_LIMIT:
        report = dict(report, content=text[:INPUT_PREVIEW_LIMIT], content_truncated=True)
    return report


def contract_results(node: Node, plan: Plan, output: Any, contracts: list[Contract]) -> list[tuple[Contract, str | None]]:
    """Each blueprint contract (core-data-structures §3.1) from this node's agent to the
    agent of a node downstream, with what is wrong with `output` under it (None: it holds)."""
    if not contracts:
        return []
    agents = {plan.agents.get(node_id) for node_id in plan.downstream(node.node_id)}
    results = []
    for contract in contracts:
        if contract.from_agent_id != node.agent_id or contract.to_agent_id not in agents:
            continue
        errors = sorted(SchemaValidator(contract.schema).iter_errors(output), key=lambda e: list(e.absolute_path))
        if errors:
            where = "/".join(map(str, errors[0].absolute_path)) or "output"
            results.append((contract, f"at {where}: {errors[0].message}"))
        else:
            results.append((contract, None))
    return results


def check_contracts(node: Node, plan: Plan, output: Any, record: dict, contracts: list[Contract]) -> None:
    """The output must match every contract it feeds, or the node run fails."""
    for contract, error in contract_results(node, plan, output, contracts):
        if error:
            raise NodeFailure(f"output breaks the contract '{contract.key}' {error}",
                              code="CONTRACT_VIOLATION", retryable=True, record=record)
