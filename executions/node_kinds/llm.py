"""The kind `llm`: one node run's context, its prompt, the backend call, the contract check.

`perform` reads rows and calls the pure engine and the agent's backend. It writes no row:
what it did goes back in `Performed`, and its only write is a compressed output, to the
shared compression cache (executions/compression.py). The services in
`executions/services/node_run.py` claim the run before and store the result after.
"""
from __future__ import annotations

from typing import Any

from agents.backends import BackendError, BackendRequest, BackendResponse, get_backend
from agents.backends.metering import calling
from agents.models import Agent
from engine.context.batching import aggregate
from engine.context.errors import RefError
from engine.context.resolution import NOT_READY, ResolutionAborted
from engine.context.tool_results import ToolBudget
from engine.context.trimming import InstructionsTooLarge
from engine.scheduling import Plan
from engine.tokens import TokenCounter
from executions.compression import compress_dependencies
from executions.context import assemble_node_context
from executions.models import NodeRun
from executions.node_errors import NodeFailure, NodeWaits
from executions.node_kinds.base import Performed, WorkerKind
from executions.node_kinds.tool_loop import AWAITING, Toolbox, converse
from executions.output_readers import named_inputs, run_scope
from executions.prompts import PROMPT_LIMIT, bounded, counting_encoding, prompt_items, render_prompt, skills
from workflows.contracts import contract_results
from workflows.models import Contract, Node

BATCHES = "\n\n=== next batch ===\n\n"  # between the prompts of a batched node, as recorded


def perform(run: NodeRun, graph, node: Node) -> Performed:
    """Perform a node of the kind `llm`: one prompt, or one per batch,
    to the agent's backend. `graph` is the workflow's `executions.run_graphs.Graph`: its plan,
    nodes and contracts."""
    plan = graph.plan
    execution = run.execution
    agent = run.agent
    try:
        backend = get_backend(agent.backend)
    except BackendError as error:  # defined badly, or no longer defined: no retry builds it better
        raise NodeFailure(str(error), code=error.code, retryable=False) from None
    scope = run_scope(execution, node, plan)
    outputs = scope["nodes"]
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
    toolbox = Toolbox.of(agent)
    # A node that stopped for a decision on tool calls goes on where it stopped: the batches
    # answered before are not asked again, nor the turns of the one it stopped in.
    resume = run.conversation if toolbox is not None else None
    replies, tokens_in, tokens_out = [], 0, 0
    if resume is not None:
        replies, tokens_in, tokens_out = resume["replies"], resume["tokens_in_before"], resume["tokens_out_before"]
        record.update(turns=list(run.turns), tool_calls=[c for c in run.tool_calls if c["status"] != AWAITING])
    prompts = []
    for call in range(assembly.batch_count):
        texts = assembly.texts(call)
        prompt = render_prompt(texts)
        prompts.append(prompt)
        if call < len(replies):
            continue
        inputs = dict(zip((name for name, _ in texts), batch_contents(assembly, call), strict=True))
        request = BackendRequest(
            agent_id=agent.agent_id, skills=skills(agent), required_skills=required,
            system_prompt=system_prompt, prompt=prompt, inputs=inputs, state=dict(execution.state),
            execution_input=dict(execution.input), node_id=node.node_id, execution_id=execution.execution_id,
            attempt=run.attempt, model=agent.model, max_output_tokens=agent.max_output_tokens, encoding=encoding,
        )
        purpose = f"batch {call + 1}/{assembly.batch_count}" if assembly.batch_count > 1 else "node"
        try:
            response = answer(backend, request, agent, toolbox, assembly, record, purpose=purpose,
                              resume=resume and resume["conversation"])
        except NodeWaits as waits:  # it goes on from here, these batches answered, once a person decides
            waits.conversation = {"conversation": waits.conversation, "replies": replies,
                                  "tokens_in_before": tokens_in, "tokens_out_before": tokens_out}
            waits.record.update(tokens_in=tokens_in + waits.record.get("tokens_in", 0),
                                tokens_out=tokens_out + waits.record.get("tokens_out", 0), backend=agent.backend,
                                prompt=BATCHES.join(prompts)[:PROMPT_LIMIT])
            raise
        resume = None
        replies.append(response.output)
        tokens_in += response.tokens_in
        tokens_out += response.tokens_out
        record.update(backend=response.backend, model=response.model)
    output = replies[0] if len(replies) == 1 else aggregate(replies, batch_aggregation(assembly))
    record.update(prompt=BATCHES.join(prompts)[:PROMPT_LIMIT], tokens_in=tokens_in, tokens_out=tokens_out)
    check_contracts(node, plan, output, record, graph.contracts)
    return Performed(output, record)


def answer(backend, request: BackendRequest, agent: Agent, toolbox: Toolbox | None, assembly, record: dict, *,
           purpose: str, resume: dict | None) -> BackendResponse:
    """The backend's answer to one prompt: for an agent with tools, after the conversation of
    tool calls it asks for (tool_loop.py), held to the node's data limit across its turns."""
    try:
        if toolbox is None:
            with calling(purpose):
                response = backend.complete(request)
        else:
            encoding = request.encoding
            budget = ToolBudget(limit=agent.context_limits.data_limit, counter=TokenCounter(encoding),
                                prompt_tokens=assembly.record["resolution"]["final_tokens"], role=agent.role,
                                abstractive=abstractive_summarizer(backend, agent.model))
            response = converse(backend, request, toolbox, budget, record, purpose=purpose, resume=resume)
    except BackendError as error:
        raise NodeFailure(str(error), code=error.code, retryable=error.retryable, record=record,
                          details=error.details) from None
    if response.tool_calls and toolbox is None:
        asked = list(dict.fromkeys(str(call.get("name", "")) for call in response.tool_calls))
        raise NodeFailure(f"{agent.agent_id} was asked to call {', '.join(asked)} and has no tools",
                          code="CAPABILITY_GAP", retryable=False, record=record, details={"missing_tools": asked})
    return response


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


def check_contracts(node: Node, plan: Plan, output: Any, record: dict, contracts: list[Contract]) -> None:
    """The output must match every contract it feeds, or the node run fails."""
    for contract, error in contract_results(node, plan, output, contracts):
        if error:
            raise NodeFailure(f"output breaks the contract '{contract.key}' {error}",
                              code="CONTRACT_VIOLATION", retryable=True, record=record)


class LlmKind(WorkerKind):
    """The node's agent gets the node's context as a prompt."""

    name = "llm"
    perform = staticmethod(perform)


KIND = LlmKind()
